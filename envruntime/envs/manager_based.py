"""ManagerBasedEnv: a VecEnv assembled from the six managers of ``envruntime.managers``.

Step order (one control step, ``decimation`` physics substeps):

1. action: the action manager turns the policy action into controls (``apply_action_ms``);
2. substeps: the backend steps ``decimation`` times (``physics_ms``, ``d2h_ms``);
3. counters: ``episode_length += 1``;
4. termination, then reward, on the post-physics state of every env;
5. reset done rows (``reset_done_ms``): first the observation of the done rows is computed from
   their terminal state (with the command they were tracking) and gathered (k rows) as
   ``final_obs``; then
   the event manager stages and writes their new state (one backend reset), the action history
   and observation history of the rows are cleared, their commands resampled, counters zeroed;
6. command: timers count down, expired rows resample, heading/standing update;
7. interval events (pushes);
8. observation of every env.

``final_obs`` is ``obs`` itself on a step where no row ended, else the done rows alone (see
``envruntime.envs.vecenv``): no full-width copy per step.

``reset(seed)`` restarts the termination and command managers (no episode counted as ended,
command terms forget what they kept across episodes), resets every row as in 5 (without
``final_obs``), then runs 6 and 8.

``update_state_ms`` covers 3-4 and 6-8: the sum of its breakdown ``update_state.<manager>.<stage>_ms``,
which has one entry per command stage (``compute``, and ``post_compute`` where a command term
has that stage; see ``envruntime.managers.command``).
Managers are constructed in ``manager_names`` order; their terms are resolved afterwards in
dependency order (action, command, event, observation, reward, termination), because
observation and reward terms read the action and command buffers.

Random numbers come from one ``numpy`` Generator seeded in ``reset(seed)``, in this order per
step: final-obs noise of done rows (per noisy group), reset events (per term), interval timers
of reset rows, command resamples of reset rows, expired command resamples, interval events,
observation noise (per noisy group: one 64-bit key, each entry then drawn from that key's
counter-based stream inside the group's kernel, ``kernels.scalar.noise_uniform``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from envruntime.backends.base import Backend
from envruntime.envs.kernel_threads import KernelThreads, kernel_ms
from envruntime.envs.vecenv import StepResult, elapsed_ms, final_obs_of, record_backend_phases
from envruntime.managers.action import ActionManager
from envruntime.managers.command import CommandManager
from envruntime.managers.event import EventManager
from envruntime.managers.observation import ObservationManager
from envruntime.managers.reward import RewardManager
from envruntime.managers.termination import TerminationManager
from envruntime.managers.terms import (
    ActionTermCfg,
    CommandTermCfg,
    EventTermCfg,
    ObsGroupCfg,
    RewardTermCfg,
    TerminationTermCfg,
)

UPDATE_STATE_STAGES: tuple[str, ...] = (  # plus ``update_state.command.post_compute_ms`` where used
    "update_state.termination.compute_ms",
    "update_state.reward.compute_ms",
    "update_state.command.compute_ms",
    "update_state.event.interval_ms",
    "update_state.observation.compute_ms",
)


@dataclass
class ManagerBasedEnvCfg:
    task: str
    decimation: int
    episode_length_s: float
    keyframe: str  # default state: qpos/qvel of this MJCF keyframe
    actions: dict[str, ActionTermCfg]
    observations: dict[str, ObsGroupCfg]
    rewards: dict[str, RewardTermCfg]
    terminations: dict[str, TerminationTermCfg]
    events: dict[str, EventTermCfg]
    commands: dict[str, CommandTermCfg]
    # False when a command writes the full state of reset rows (the event manager then writes none)
    events_write_reset_state: bool = True


class ManagerBasedEnv:
    """See the module docstring for the step order and the random-number order."""

    variant = "manager"
    manager_names: tuple[str, ...] = ("action", "observation", "reward", "termination", "event", "command")

    def __init__(self, cfg: ManagerBasedEnvCfg, backend: Backend) -> None:
        if cfg.decimation < 1:
            raise ValueError(f"decimation must be >= 1, got {cfg.decimation}")
        info = backend.info
        if cfg.keyframe not in info.keyframes:
            raise ValueError(f"model {info.xml_path.name} has no keyframe {cfg.keyframe!r}")
        self.cfg = cfg
        self.task = cfg.task
        self.backend = backend
        self.num_envs = num_envs = backend.num_envs
        self.decimation = cfg.decimation
        self.step_dt = info.timestep * cfg.decimation
        self.max_episode_length = max(1, round(cfg.episode_length_s / self.step_dt))
        self.default_qpos, self.default_qvel = (a.astype(np.float64) for a in info.keyframes[cfg.keyframe])
        self.episode_length = np.zeros(num_envs, dtype=np.int64)
        self.rng = np.random.default_rng(0)
        self._all_rows = np.arange(num_envs, dtype=np.int64)

        self.action_manager = ActionManager(cfg.actions, self)
        self.observation_manager = ObservationManager(cfg.observations, self)
        self.reward_manager = RewardManager(cfg.rewards, self)
        self.termination_manager = TerminationManager(cfg.terminations, self)
        self.event_manager = EventManager(cfg.events, self, cfg.events_write_reset_state)
        self.command_manager = CommandManager(cfg.commands, self)
        for manager in (
            self.action_manager,
            self.command_manager,
            self.event_manager,
            self.observation_manager,
            self.reward_manager,
            self.termination_manager,
        ):
            manager.resolve()

        self.action_dim = self.action_manager.dim
        self.obs_dims = dict(self.observation_manager.dims)
        self._final_rows = {g: np.zeros_like(o) for g, o in self.observation_manager.obs.items()}
        self._command_stages = {s: f"update_state.command.{s}_ms" for s in self.command_manager.stages}
        self._stage_keys = tuple(dict.fromkeys((*UPDATE_STATE_STAGES, *self._command_stages.values())))
        phases = ("apply_action_ms", "physics_ms", "d2h_ms", "update_state_ms", *self._stage_keys)
        self.timings: dict[str, float] = dict.fromkeys((*phases, "reset_done_ms"), 0.0)
        self.kernel_threads = KernelThreads.from_env(getattr(backend, "threads", None))

    def _reset_rows(self, rows: np.ndarray) -> None:
        self.event_manager.reset(rows)
        self.action_manager.reset(rows)
        self.observation_manager.reset(rows)
        self.command_manager.reset(rows)
        self.episode_length[rows] = 0

    def reset(self, seed: int) -> dict[str, np.ndarray]:
        """Seed the generator, restart the managers, reset every env and return the first
        observation."""
        self.observation_manager.compile_one_row_path(self._all_rows[:1])
        self.rng = np.random.default_rng(seed)
        self.termination_manager.restart()
        self.command_manager.restart()
        self._reset_rows(self._all_rows)
        self.command_manager.compute()
        self.observation_manager.compute(self._all_rows)
        return self.observation_manager.obs

    def step(self, action: np.ndarray) -> StepResult:
        """Advance one control step; see the module docstring for the order."""
        t = self.timings
        threads = self.kernel_threads.begin()
        t0 = time.perf_counter()
        self.action_manager.process(action)
        t1 = time.perf_counter()
        self.backend.step(self.action_manager.ctrl, self.decimation)
        t2 = time.perf_counter()
        self.episode_length += 1
        done = self.termination_manager.compute()
        t3 = time.perf_counter()
        reward = self.reward_manager.compute()
        t4 = time.perf_counter()
        done_rows = np.flatnonzero(done)
        k = done_rows.shape[0]
        obs = self.observation_manager.obs
        if k:
            self.observation_manager.compute(done_rows)
            for g, o in obs.items():
                np.take(o, done_rows, axis=0, out=self._final_rows[g][:k])
            self._reset_rows(done_rows)
        t5 = time.perf_counter()
        self.command_manager.compute()
        t6 = time.perf_counter()
        self.event_manager.apply_interval()
        t7 = time.perf_counter()
        self.observation_manager.compute(self._all_rows)
        t8 = time.perf_counter()

        record_backend_phases(t, self.backend, elapsed_ms(t0, t1))
        t["update_state.termination.compute_ms"] = elapsed_ms(t2, t3)
        t["update_state.reward.compute_ms"] = elapsed_ms(t3, t4)
        for stage, key in self._command_stages.items():
            t[key] = self.command_manager.stage_ms[stage]
        t["update_state.event.interval_ms"] = elapsed_ms(t6, t7)
        t["update_state.observation.compute_ms"] = elapsed_ms(t7, t8)
        t["update_state_ms"] = sum(t[key] for key in self._stage_keys)
        t["reset_done_ms"] = elapsed_ms(t4, t5)
        self.kernel_threads.end(threads, kernel_ms(t))
        tm = self.termination_manager
        return StepResult(obs=obs, reward=reward, terminated=tm.terminated, truncated=tm.truncated,
                          final_obs=final_obs_of(obs, self._final_rows, k), done_rows=done_rows)

    def close(self) -> None:
        """Release the backend."""
        self.backend.close()
