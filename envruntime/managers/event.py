"""Event manager: reset events (new state of the rows being reset, one backend reset call) and
interval events (per-env countdown timers, e.g. pushes).

With ``write_reset_state=False`` the manager writes no state on reset (no default pose, no backend
reset): a later reset stage writes the full state of the rows itself (e.g. a motion command
starting them on a reference clip), so they are not written twice; reset terms are then refused.

Random numbers are drawn in a fixed order: on reset, each reset term's (k, draws) block in term
order, then one (k,) timer block per interval term; on each step, per interval term in order,
the (k, draws) block of the rows whose timer ran out, then their (k,) new timers.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from envruntime.backends.reset_staging import ResetStaging
from envruntime.managers.terms import EventTermCfg, build


class EventManager:
    def __init__(self, terms: dict[str, EventTermCfg], env: Any, write_reset_state: bool = True) -> None:
        for name, cfg in terms.items():
            if cfg.mode not in ("reset", "interval"):
                raise ValueError(f"event term {name!r}: mode must be 'reset' or 'interval', got {cfg.mode!r}")
            if cfg.mode == "reset" and not write_reset_state:
                raise ValueError(
                    f"event term {name!r}: reset events need the event manager to write the reset state "
                    "(write_reset_state is off)"
                )
            if cfg.mode == "interval" and (cfg.interval_range_s is None or cfg.interval_range_s[0] <= 0):
                raise ValueError(f"event term {name!r}: interval events need interval_range_s with lo > 0")
        self._cfgs = terms
        self._env = env
        self.write_reset_state = write_reset_state
        self._reset_terms: list[Any] = []
        self._interval_terms: list[tuple[Any, tuple[float, float], np.ndarray]] = []
        self._staging = ResetStaging(env.default_qpos, env.default_qvel, env.num_envs)

    def resolve(self) -> None:
        """Build the terms (called once every manager exists)."""
        n = self._env.num_envs
        for name, cfg in self._cfgs.items():
            term = build(cfg, self._env, "event", name)
            if cfg.mode == "reset":
                self._reset_terms.append(term)
            else:
                self._interval_terms.append((term, cfg.interval_range_s, np.zeros(n)))

    def reset(self, rows: np.ndarray) -> None:
        """Stage the default state for ``rows``, apply the reset terms, write it to the backend in
        one call (unless ``write_reset_state`` is off), and redraw the interval timers of ``rows``."""
        env = self._env
        k = rows.shape[0]
        if self.write_reset_state:
            qpos, qvel = self._staging.defaults(k)
            for term in self._reset_terms:
                term(env.rng.random((k, term.draws)), rows, qpos, qvel)
            env.backend.reset(rows, qpos, qvel)
        for _, (lo, hi), time_left in self._interval_terms:
            time_left[rows] = lo + (hi - lo) * env.rng.random(k)

    def apply_interval(self) -> None:
        """Count down the interval timers; fire the terms of rows whose timer ran out."""
        env = self._env
        for term, (lo, hi), time_left in self._interval_terms:
            time_left -= env.step_dt
            rows = np.flatnonzero(time_left <= 0.0)
            if rows.shape[0] == 0:
                continue
            term(env.rng.random((rows.shape[0], term.draws)), rows, self._staging.qpos, self._staging.qvel)
            time_left[rows] = lo + (hi - lo) * env.rng.random(rows.shape[0])
