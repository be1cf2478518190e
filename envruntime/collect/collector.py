"""Off-policy collection: actor -> ``env.step`` -> replay insert, with per-phase timers.

One ``step`` is one collector iteration over all ``num_envs`` envs. Its phases use the
DESIGN.md names: ``collector_step_ms`` (the whole iteration), ``policy_ms`` (obs to torch,
forward, sampling, action back to NumPy), ``env_step_ms`` (``env.step`` as a whole), the env's own
``timings`` (``apply_action_ms``, ``physics_ms``, ``d2h_ms``, ``update_state_ms`` and its
``update_state.*`` breakdown, ``reset_done_ms``) and ``replay_ms`` (the replay insert). No
gradient updates: this is what the benchmark measures.
"""

from __future__ import annotations

from dataclasses import dataclass
from time import perf_counter_ns

import numpy as np
import torch
from torch import nn

from envruntime.collect.actors import make_actor
from envruntime.collect.replay import ReplayBuffer
from envruntime.envs.vecenv import ENV_PHASES, VecEnv

COLLECTOR_PHASES: tuple[str, ...] = ("collector_step_ms", "policy_ms", "env_step_ms", "replay_ms")
BASE_PHASES: tuple[str, ...] = COLLECTOR_PHASES + ENV_PHASES
_NS_PER_MS = 1e6


@dataclass
class CollectorStep:
    """What one collector iteration measured."""

    phases: dict[str, float]  # ms per phase; every BASE_PHASES key plus the env's breakdown
    resets: int  # rows that ended (terminated or truncated) in this step


class Collector:
    """Steps ``env`` with ``actor``'s sampled actions and stores every transition in ``replay``.

    The actor reads the ``actor`` observation group; the replay stores every group.
    """

    def __init__(self, env: VecEnv, actor: nn.Module, replay: ReplayBuffer) -> None:
        self.env = env
        self.actor = actor
        self.replay = replay
        self._obs: dict[str, np.ndarray] = {}
        self._done = np.zeros(env.num_envs, dtype=np.bool_)  # terminated | truncated, reused every step

    def reset(self, seed: int) -> None:
        """Reset every env and stage the first observation in the replay."""
        torch.manual_seed(seed)
        self._obs = self.env.reset(seed)
        self.replay.put_obs(self._obs)

    def step(self) -> CollectorStep:
        """Run one iteration and return its phase timings."""
        if not self._obs:
            raise RuntimeError("Collector.step called before Collector.reset")
        t_start = perf_counter_ns()
        with torch.inference_mode():
            action = self.actor(torch.from_numpy(self._obs["actor"])).numpy()
        t_policy = perf_counter_ns()
        result = self.env.step(action)
        t_env = perf_counter_ns()
        self.replay.put_transition(action, result.reward, result.terminated, result.truncated,
                                   result.final_obs)
        self.replay.put_obs(result.obs)
        t_end = perf_counter_ns()
        self._obs = result.obs

        phases = dict.fromkeys(BASE_PHASES, 0.0)
        phases.update(self.env.timings)
        phases["collector_step_ms"] = (t_end - t_start) / _NS_PER_MS
        phases["policy_ms"] = (t_policy - t_start) / _NS_PER_MS
        phases["env_step_ms"] = (t_env - t_policy) / _NS_PER_MS
        phases["replay_ms"] = (t_end - t_env) / _NS_PER_MS
        resets = int(np.count_nonzero(np.logical_or(result.terminated, result.truncated, out=self._done)))
        return CollectorStep(phases=phases, resets=resets)


def make_collector(env: VecEnv, algo: str, replay_capacity: int) -> Collector:
    """A collector with ``algo``'s actor and a replay of ``replay_capacity`` vector steps
    (``replay_capacity * num_envs`` rows)."""
    actor = make_actor(algo, env.obs_dims["actor"], env.action_dim)
    replay = ReplayBuffer(replay_capacity * env.num_envs, env.obs_dims, env.action_dim)
    return Collector(env, actor, replay)
