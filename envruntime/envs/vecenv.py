"""What every task variant (manager or direct) offers the collector.

A ``VecEnv`` steps ``num_envs`` envs at once. Observations are dicts of float32 ``(N, dim)``
arrays keyed by group (``actor``, ``critic``). ``step`` resets the rows that ended inside the
same call (auto-reset) and returns the true pre-reset observation of those rows in
``final_obs``, so an off-policy collector stores the right ``next_obs``.

``final_obs`` contract (no full copy per step): on a step where no row ended (``done_rows`` empty)
``final_obs`` *is* ``obs`` (the same dict, the same arrays); otherwise it holds only the done rows,
``(k, dim)`` arrays whose row ``i`` is the pre-reset observation of env ``done_rows[i]``. The true
next observation of env ``r`` is therefore ``obs[g][r]`` unless ``r`` is in ``done_rows``.
``dense_final_obs`` builds the ``(N, dim)`` form where a consumer wants it.

``timings`` holds the milliseconds of the last ``step`` under the phase names of docs/design.md that
belong to the env: ``apply_action_ms``, ``physics_ms``, ``d2h_ms``, ``update_state_ms`` (and its
``update_state.<manager>.<stage>_ms`` breakdown), ``reset_done_ms``. Every key appears on every
step, with 0.0 where the phase did not run.

``kernel_threads`` picks, step by step, how many threads the env's row kernels run on
(``envruntime.envs.kernel_threads``); its ``last`` is the count of the last ``step``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from envruntime.backends.base import Backend
from envruntime.envs.kernel_threads import KernelThreads

ENV_PHASES: tuple[str, ...] = (
    "apply_action_ms",
    "physics_ms",
    "d2h_ms",
    "update_state_ms",
    "reset_done_ms",
)


@dataclass
class StepResult:
    """The outcome of one vector step. Arrays are owned by the env and overwritten next step."""

    obs: dict[str, np.ndarray]  # after auto-reset: what the policy sees next
    reward: np.ndarray  # (N,) float32
    terminated: np.ndarray  # (N,) bool: the episode ended in a terminal state
    truncated: np.ndarray  # (N,) bool: time limit, not terminal
    final_obs: dict[str, np.ndarray]  # ``obs`` itself, or (k, dim) pre-reset rows of done_rows
    done_rows: np.ndarray  # (k,) int64, ascending: the rows that ended (terminated | truncated)


@runtime_checkable
class VecEnv(Protocol):
    """A batched env. See the module docstring."""

    task: str
    variant: str  # "manager" | "direct"
    num_envs: int
    action_dim: int
    obs_dims: dict[str, int]
    backend: Backend
    manager_names: tuple[str, ...]  # managers this env built, in construction order; () for direct
    timings: dict[str, float]
    kernel_threads: KernelThreads

    def reset(self, seed: int) -> dict[str, np.ndarray]:
        """Reset every env (seeding the env's random generator) and return the first observation."""
        ...

    def step(self, action: np.ndarray) -> StepResult:
        """Apply ``action`` (N, action_dim) float32 in [-1, 1]-ish policy units and advance one
        control step (``decimation`` physics substeps)."""
        ...

    def close(self) -> None:
        """Release the backend."""
        ...


def dense_final_obs(result: StepResult) -> dict[str, np.ndarray]:
    """New ``(N, dim)`` arrays: ``obs`` with the done rows' pre-reset observations (a copy)."""
    dense = {g: o.copy() for g, o in result.obs.items()}
    if result.done_rows.shape[0]:
        for g, rows in result.final_obs.items():
            dense[g][result.done_rows] = rows
    return dense


def final_obs_of(obs: dict[str, np.ndarray], final_rows: dict[str, np.ndarray],
                 k: int) -> dict[str, np.ndarray]:
    """A step's ``final_obs``: ``obs`` when no row ended (``k == 0``), else the first ``k`` rows of
    the env's ``final_rows`` buffers (views, no copy)."""
    return {g: rows[:k] for g, rows in final_rows.items()} if k else obs


def elapsed_ms(start: float, end: float) -> float:
    """Milliseconds between two ``time.perf_counter()`` readings."""
    return (end - start) * 1e3


def record_backend_phases(timings: dict[str, float], backend: Backend, apply_action_ms: float) -> None:
    """Fill the backend's phases into an env's ``timings``: ``apply_action_ms`` (the env's own
    action work plus any control upload the backend timed as ``h2d_ms``), ``physics_ms``, ``d2h_ms``.
    Every task variant calls this so no phase is dropped or counted twice."""
    bt = backend.timings
    timings["apply_action_ms"] = apply_action_ms + bt.get("h2d_ms", 0.0)
    timings["physics_ms"] = bt["physics_ms"]
    timings["d2h_ms"] = bt["d2h_ms"]
