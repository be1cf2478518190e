"""Off-policy collection: policy -> ``env.step`` -> replay insert, with per-phase timers.

One ``step`` is one collector iteration over all ``num_envs`` envs. Its phases use the names of
docs/design.md: ``collector_step_ms`` (the whole iteration), ``policy_ms`` (obs to the actor's
device, forward, sampling, action back to NumPy, synchronised on CUDA; 0.0 with pregenerated
actions, see ``envruntime.collect.policy``), ``env_step_ms`` (``env.step`` as a whole), the env's
own ``timings`` (``apply_action_ms``, ``physics_ms``, ``d2h_ms``, ``update_state_ms`` and its
``update_state.*`` breakdown, ``reset_done_ms``) and ``replay_ms`` (the transition written into
its ring slot, terminal rows included, and the next observation into the next slot). No gradient
updates: this is what the benchmark measures.
"""

from __future__ import annotations

from dataclasses import dataclass
from time import perf_counter_ns

import numpy as np
import torch

from envruntime.collect.actors import make_actor
from envruntime.collect.policy import ACTIONS, ActorPolicy, Policy, PregeneratedPolicy, torch_device
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
    """Steps ``env`` with ``policy``'s actions and stores every transition in ``replay``.

    The policy reads the ``actor`` observation group; the replay stores every group.
    """

    def __init__(self, env: VecEnv, policy: Policy, replay: ReplayBuffer) -> None:
        self.env = env
        self.policy = policy
        self.replay = replay
        self._obs: dict[str, np.ndarray] = {}
        self._done = np.zeros(env.num_envs, dtype=np.bool_)  # terminated | truncated, reused every step

    def reset(self, seed: int) -> None:
        """Reset every env and write the first observation into the replay's first slot."""
        torch.manual_seed(seed)
        self._obs = self.env.reset(seed)
        self.replay.put_obs(self._obs)

    def step(self) -> CollectorStep:
        """Run one iteration and return its phase timings."""
        if not self._obs:
            raise RuntimeError("Collector.step called before Collector.reset")
        t_start = perf_counter_ns()
        action = self.policy.act(self._obs["actor"])
        t_policy = perf_counter_ns()
        result = self.env.step(action)
        t_env = perf_counter_ns()
        self.replay.put_transition(action, result.reward, result.terminated, result.truncated,
                                   result.obs, result.final_obs, result.done_rows)
        self.replay.put_obs(result.obs)
        t_end = perf_counter_ns()
        self._obs = result.obs

        phases = dict.fromkeys(BASE_PHASES, 0.0)
        phases.update(self.env.timings)
        phases["collector_step_ms"] = (t_end - t_start) / _NS_PER_MS
        phases["policy_ms"] = (t_policy - t_start) / _NS_PER_MS if self.policy.runs_forward else 0.0
        phases["env_step_ms"] = (t_env - t_policy) / _NS_PER_MS
        phases["replay_ms"] = (t_end - t_env) / _NS_PER_MS
        resets = int(np.count_nonzero(np.logical_or(result.terminated, result.truncated, out=self._done)))
        return CollectorStep(phases=phases, resets=resets)

    def synchronize(self) -> None:
        """Wait for the policy's and the backend's devices, so no queued work outlives the call."""
        self.policy.synchronize()
        self.env.backend.synchronize()


def make_policy(env: VecEnv, algo: str, actions: str = "actor", device: str = "cpu", seed: int = 0) -> Policy:
    """``algo``'s actor on ``device`` (``actions="actor"``) or a bank of random actions drawn
    with ``seed`` (``"pregenerated"``); ``device`` is checked either way."""
    target = torch_device(device)
    if actions == "pregenerated":
        return PregeneratedPolicy(env.num_envs, env.action_dim, seed)
    if actions != "actor":
        raise ValueError(f"unknown actions {actions!r}; valid: {', '.join(ACTIONS)}")
    actor = make_actor(algo, env.obs_dims["actor"], env.action_dim)
    return ActorPolicy(actor, target, env.num_envs, env.action_dim)


def make_collector(env: VecEnv, algo: str, replay_capacity: int, actions: str = "actor",
                   device: str = "cpu", seed: int = 0) -> Collector:
    """A collector with the policy of ``make_policy`` and a replay of ``replay_capacity`` vector
    steps (``replay_capacity * num_envs`` rows)."""
    policy = make_policy(env, algo, actions, device, seed)
    replay = ReplayBuffer(replay_capacity * env.num_envs, env.obs_dims, env.action_dim)
    return Collector(env, policy, replay)
