"""DirectEnv: the plumbing every hand-fused direct variant shares.

A direct variant keeps its per-step math in its own fused Numba kernels; this base owns the rest,
in the manager variant's order (see ``envruntime.envs.manager_based``):

1. action: history shift + joint-position targets, one kernel (``apply_action_ms``);
2. ``backend.step`` (``physics_ms``, ``d2h_ms``);
3. ``_post_physics`` (hook): counters, terminations, reward, one fused pass;
4. done rows: their observation from the terminal state (kept for ``final_obs``), then
   ``_reset_rows``: ``_reset_state`` (hook), push timers, action history, ``_reset_commands``
   (hook), episode counters (``reset_done_ms``);
5. ``_advance_commands`` (hook), pushes, the observation of every row with the command update
   (``_observe_rows`` hook with ``update_command``);
6. ``final_obs``: ``obs`` itself when no row ended, else the done rows' pre-reset rows from 4
   (views, no copy; see ``envruntime.envs.vecenv``).

``update_state_ms`` covers 3 and 5. ``reset(seed)`` seeds the generator, clears ``terminated``,
calls ``_restart`` (hook), resets every row as in 4, then runs 5 without the pushes.

Random numbers come from one Generator, in the manager variant's order: observation noise of the
done rows, the reset draws of ``_reset_state``, push timers, command draws of ``_reset_commands``,
those of ``_advance_commands``, push kicks and their new timers, observation noise of every row.
Observation noise takes one 64-bit key from the Generator per call; the fused kernel draws each
entry from that key's counter-based stream (``kernels.scalar.noise_uniform``), in parallel.
Subclasses build their arrays in ``__init__`` after ``super().__init__``, call
``_init_observations`` and then bind their fused kernels' arrays by name (``kernel_args``).
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from envruntime.backends.base import Backend
from envruntime.backends.reset_staging import ResetStaging
from envruntime.envs.kernel_threads import KernelThreads, kernel_ms
from envruntime.envs.vecenv import ENV_PHASES, StepResult, elapsed_ms, final_obs_of, record_backend_phases
from envruntime.kernels.action import record_action_and_targets
from envruntime.kernels.scalar import draw_noise_key


def kernel_args(kernel: Any, leading: int = 0, **named: Any) -> tuple[Any, ...]:
    """The arguments of Numba ``kernel`` after its first ``leading`` parameters, in its parameter
    order, from ``named`` (every one by its parameter name: a missing or unknown name is a
    TypeError naming it).

    A fused kernel takes 20+ arrays, several of the same shape: naming each once, at construction,
    keeps a swapped pair out of the kernel, and the step calls ``kernel(*per_call, *args)`` with no
    lookups. The arrays are bound, so they must be updated in place, never replaced.
    """
    params = tuple(inspect.signature(kernel.py_func).parameters)[leading:]
    missing = [p for p in params if p not in named]
    unknown = [k for k in named if k not in params]
    if missing or unknown:
        raise TypeError(f"{kernel.__name__}: missing arguments {missing}, unknown {unknown}")
    return tuple(named[p] for p in params)


class DirectCfg(Protocol):
    """The parameters this base reads (every task's ``envruntime.tasks.common.params.TaskCfg`` has
    them)."""

    decimation: int
    episode_length_s: float
    action_scale: float
    action_clip: float
    joint_soft_ratio: float
    push_interval_s: tuple[float, float]
    push_vel: float


class DirectEnv:
    """See the module docstring. Subclasses set ``task`` and implement the hooks."""

    task: str
    variant = "direct"
    manager_names: tuple[str, ...] = ()

    def __init__(self, cfg: DirectCfg, backend: Backend, keyframe: str) -> None:
        info = backend.info
        if keyframe not in info.keyframes:
            raise ValueError(f"model {info.xml_path.name} has no keyframe {keyframe!r}")
        n = backend.num_envs
        self.cfg, self.backend, self.num_envs = cfg, backend, n
        self.step_dt = info.timestep * cfg.decimation
        self.max_episode_length = max(1, round(cfg.episode_length_s / self.step_dt))
        self.default_qpos, self.default_qvel = (a.astype(np.float64) for a in info.keyframes[keyframe])
        self.qadr, self.dadr = info.joint_qpos_adr.copy(), info.joint_dof_adr.copy()
        self.joint_default = self.default_qpos[self.qadr]
        self.joint_lo, self.joint_hi = info.joint_range[:, 0].copy(), info.joint_range[:, 1].copy()
        mid = info.joint_range.mean(axis=1)
        half = 0.5 * cfg.joint_soft_ratio * (self.joint_hi - self.joint_lo)
        self.soft_lo, self.soft_hi = mid - half, mid + half
        self.ctrl_offset = self.default_qpos[info.joint_qpos_adr[info.actuator_joint]]
        self.ctrl_lo, self.ctrl_hi = info.ctrl_range[:, 0].copy(), info.ctrl_range[:, 1].copy()

        self.action_dim = info.nu
        self.rng = np.random.default_rng(0)
        self.rows = np.arange(n, dtype=np.int64)
        self.action = np.zeros((n, info.nu), dtype=np.float32)
        self.prev_action = np.zeros_like(self.action)
        self.ctrl = np.zeros((n, info.nu), dtype=backend.dtype)
        self.episode_length = np.zeros(n, dtype=np.int64)
        self.terminated, self.truncated, self.done = (np.zeros(n, dtype=np.bool_) for _ in range(3))
        self.reward = np.zeros(n, dtype=np.float32)
        self.push_time_left = np.zeros(n)
        self._staging = ResetStaging(self.default_qpos, self.default_qvel, n)
        self.timings: dict[str, float] = dict.fromkeys(ENV_PHASES, 0.0)
        self.kernel_threads = KernelThreads.from_env(getattr(backend, "threads", None))

    def _init_observations(self, noise_amp: np.ndarray, critic_dim: int) -> None:
        """Allocate the actor (``len(noise_amp)`` columns, uniform noise of that amplitude) and
        critic observation buffers."""
        n, actor_dim = self.num_envs, len(noise_amp)
        self.noise_amp = noise_amp
        self.noisy = bool(np.any(noise_amp))
        self.obs_dims = {"actor": actor_dim, "critic": critic_dim}
        self.obs = {g: np.zeros((n, d), dtype=np.float32) for g, d in self.obs_dims.items()}
        self._final_rows = {g: np.zeros_like(o) for g, o in self.obs.items()}

    def sensor_cols(self, names: Sequence[str], offset: int = 0) -> np.ndarray:
        """The first ``sensordata`` column (plus ``offset``) of each named sensor."""
        info = self.backend.info
        return np.array([info.sensor_slice(s).start + offset for s in names], dtype=np.int64)

    def step_weights(self, weights: Sequence[float]) -> np.ndarray:
        """Reward weights times the control step (the manager's ``weight * step_dt``)."""
        return np.array([w * self.step_dt for w in weights])

    # hooks

    def _post_physics(self) -> None:
        """Fill ``episode_length`` (+1), ``terminated``, ``truncated``, ``done`` and ``reward``."""
        raise NotImplementedError

    def _observe_rows(
        self, rows: np.ndarray, update_command: bool, noise_key: np.uint64, actor: np.ndarray,
        critic: np.ndarray,
    ) -> None:  # fmt: skip
        """Fill ``actor``/``critic`` row ``i`` for env ``rows[i]`` (actor entry ``(i, c)``'s noise
        draw ``i * actor_dim + c`` of stream ``noise_key``), first updating the command where
        ``update_command``."""
        raise NotImplementedError

    def _reset_state(self, rows: np.ndarray) -> None:
        """Write the new state of reset ``rows`` to the backend (default: none here, the command
        reset writes it)."""

    def _reset_commands(self, rows: np.ndarray) -> None:
        """Resample the commands of reset ``rows`` (default: none)."""

    def _advance_commands(self) -> None:
        """The per-step command work before the pushes (default: none)."""

    def _restart(self) -> None:
        """Forget what a previous run left behind (default: nothing to forget)."""

    # plumbing

    def _observe(self, rows: np.ndarray, update_command: bool, actor: np.ndarray, critic: np.ndarray) -> None:
        key = draw_noise_key(self.rng) if self.noisy else np.uint64(0)
        self._observe_rows(rows, update_command, key, actor, critic)

    def _draw_push_timers(self, rows: np.ndarray) -> None:
        lo, hi = self.cfg.push_interval_s
        self.push_time_left[rows] = lo + (hi - lo) * self.rng.random(rows.shape[0])

    def _push(self) -> None:
        self.push_time_left -= self.step_dt
        pushed = np.flatnonzero(self.push_time_left <= 0.0)
        if pushed.shape[0]:
            lo, hi = -self.cfg.push_vel, self.cfg.push_vel
            self.backend.apply_body_velocity_kick(
                pushed, lo + (hi - lo) * self.rng.random((pushed.shape[0], 2))
            )
            self._draw_push_timers(pushed)

    def _reset_rows(self, rows: np.ndarray) -> None:
        self._reset_state(rows)
        self._draw_push_timers(rows)
        self.action[rows] = 0.0
        self.prev_action[rows] = 0.0
        self._reset_commands(rows)
        self.episode_length[rows] = 0

    def reset(self, seed: int) -> dict[str, np.ndarray]:
        """Seed the generator, reset every env and return the first observation."""
        self.rng = np.random.default_rng(seed)
        self.terminated[:] = False
        self._restart()
        self._reset_rows(self.rows)
        self._advance_commands()
        self._observe(self.rows, True, self.obs["actor"], self.obs["critic"])
        return self.obs

    def step(self, action: np.ndarray) -> StepResult:
        """Advance one control step; see the module docstring for the order."""
        if action.shape != self.action.shape:
            raise ValueError(f"action must have shape {self.action.shape}, got {action.shape}")
        b, t, cfg = self.backend, self.timings, self.cfg
        threads = self.kernel_threads.begin()
        t0 = time.perf_counter()
        record_action_and_targets(
            action, self.action, self.prev_action, cfg.action_clip, cfg.action_scale, self.ctrl_offset,
            self.ctrl_lo, self.ctrl_hi, self.ctrl,
        )  # fmt: skip
        t1 = time.perf_counter()
        b.step(self.ctrl, cfg.decimation)
        t2 = time.perf_counter()
        self._post_physics()
        t3 = time.perf_counter()
        done_rows = np.flatnonzero(self.done)
        k = done_rows.shape[0]
        if k:
            self._observe(done_rows, False, self._final_rows["actor"][:k], self._final_rows["critic"][:k])
            self._reset_rows(done_rows)
        t4 = time.perf_counter()
        self._advance_commands()
        self._push()
        self._observe(self.rows, True, self.obs["actor"], self.obs["critic"])
        t5 = time.perf_counter()
        record_backend_phases(t, b, elapsed_ms(t0, t1))
        t["update_state_ms"] = elapsed_ms(t2, t3) + elapsed_ms(t4, t5)
        t["reset_done_ms"] = elapsed_ms(t3, t4)
        self.kernel_threads.end(threads, kernel_ms(t))
        return StepResult(
            obs=self.obs, reward=self.reward, terminated=self.terminated, truncated=self.truncated,
            final_obs=final_obs_of(self.obs, self._final_rows, k), done_rows=done_rows,
        )  # fmt: skip

    def close(self) -> None:
        """Release the backend."""
        self.backend.close()
