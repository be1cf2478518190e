"""Term configs (func + params and the manager-specific knobs) and what their funcs build.

A term's ``func`` is called once, at manager construction, as ``func(env, **params)``: it looks
up names (sensors, joints, commands) and returns the object the manager calls every step, which
runs a Numba kernel over ``(N, ...)`` arrays. Nothing is looked up by name on the step path.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import numpy as np


class ObsTerm(Protocol):
    """Fills ``out`` (len(rows), dim), row ``i`` for env ``rows[i]``."""

    dim: int

    def __call__(self, rows: np.ndarray, out: np.ndarray) -> None: ...


RewardFn = Callable[[np.ndarray], None]  # fills the raw (N,) float64 values of one term
TerminationFn = Callable[[np.ndarray], None]  # fills the (N,) bool flags of one term


class ActionTerm(Protocol):
    """Turns its ``dim`` columns of the policy action into the backend's controls."""

    dim: int

    def __call__(self, action: np.ndarray, ctrl: np.ndarray) -> None: ...


class EventTerm(Protocol):
    """Consumes ``draws`` [0, 1) numbers per row. Reset events edit the staged (k, nq)/(k, nv)
    state of the rows being reset; interval events act on the backend directly."""

    draws: int

    def __call__(self, u: np.ndarray, rows: np.ndarray, qpos: np.ndarray, qvel: np.ndarray) -> None: ...


class CommandTerm(Protocol):
    """A command the policy tracks: (N, dim) values, resampled per row.

    Optional methods the command manager calls where a term has them: ``post_compute()``, a
    second stage after every term's ``compute`` (timed on its own), and ``restart()``, which
    forgets state kept across episodes when a new seeded run starts."""

    command: np.ndarray

    def reset(self, rows: np.ndarray, rng: np.random.Generator) -> None: ...

    def compute(self, dt: float, rng: np.random.Generator) -> None: ...


@dataclass
class ActionTermCfg:
    func: Callable[..., ActionTerm]
    params: dict[str, Any] = field(default_factory=dict)


@dataclass
class ObsTermCfg:
    """``noise``: uniform noise amplitude; ``clip``: (lo, hi) after noise; ``scale`` last."""

    func: Callable[..., ObsTerm]
    params: dict[str, Any] = field(default_factory=dict)
    noise: float = 0.0
    clip: tuple[float, float] | None = None
    scale: float = 1.0


@dataclass
class ObsGroupCfg:
    """Terms concatenated in order; ``history_length`` frames stacked, oldest first."""

    terms: dict[str, ObsTermCfg]
    history_length: int = 1
    enable_noise: bool = True


@dataclass
class RewardTermCfg:
    """Contributes ``weight * raw * step_dt`` to the reward."""

    func: Callable[..., RewardFn]
    weight: float
    params: dict[str, Any] = field(default_factory=dict)


@dataclass
class TerminationTermCfg:
    """``time_out`` terms truncate (time limit); the others terminate."""

    func: Callable[..., TerminationFn]
    params: dict[str, Any] = field(default_factory=dict)
    time_out: bool = False


@dataclass
class EventTermCfg:
    """``reset`` events run on the rows being reset; ``interval`` events every
    ``interval_range_s`` seconds (drawn per env, redrawn after each firing and on reset)."""

    func: Callable[..., EventTerm]
    mode: Literal["reset", "interval"]
    params: dict[str, Any] = field(default_factory=dict)
    interval_range_s: tuple[float, float] | None = None


@dataclass
class CommandTermCfg:
    func: Callable[..., CommandTerm]
    params: dict[str, Any] = field(default_factory=dict)


def build(cfg: Any, env: Any, kind: str, name: str) -> Any:
    """Call ``cfg.func(env, **cfg.params)``, naming the term in any error."""
    try:
        return cfg.func(env, **cfg.params)
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{kind} term {name!r}: {exc}") from exc
