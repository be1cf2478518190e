"""Command manager: named command terms (e.g. a velocity ``twist``), resampled on reset and when
their per-env timer runs out.

``compute`` runs in stages, each timed into ``stage_ms``: ``compute`` (every term's ``compute``),
then ``post_compute`` for the terms that have that optional stage (e.g. the motion command's
re-anchoring). ``restart`` calls the optional ``restart`` of the terms that keep state across
episodes (a new seeded run starts clean).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from envruntime.managers.terms import CommandTermCfg, build


def _with_method(terms: list[Any], name: str) -> list[Any]:
    return [t for t in terms if callable(getattr(t, name, None))]


class CommandManager:
    def __init__(self, terms: dict[str, CommandTermCfg], env: Any) -> None:
        self._cfgs = terms
        self._env = env
        self._terms: dict[str, Any] = {}
        self._post_compute_terms: list[Any] = []
        self._restart_terms: list[Any] = []
        self.stages: tuple[str, ...] = ("compute",)
        self.stage_ms: dict[str, float] = {"compute": 0.0}

    def resolve(self) -> None:
        """Build the terms (called once every manager exists) and find their optional stages."""
        self._terms = {name: build(cfg, self._env, "command", name) for name, cfg in self._cfgs.items()}
        terms = list(self._terms.values())
        self._post_compute_terms = _with_method(terms, "post_compute")
        self._restart_terms = _with_method(terms, "restart")
        self.stages = ("compute", "post_compute") if self._post_compute_terms else ("compute",)
        self.stage_ms = dict.fromkeys(self.stages, 0.0)

    def term(self, name: str) -> Any:
        """The command term ``name``."""
        if name not in self._terms:
            raise KeyError(f"no command {name!r}; commands: {', '.join(self._cfgs)}")
        return self._terms[name]

    def command(self, name: str) -> np.ndarray:
        """The (N, dim) values of command ``name``."""
        return self.term(name).command

    def compute(self) -> None:
        """Advance every term by one control step, stage by stage (see the module docstring)."""
        env = self._env
        start = time.perf_counter()
        for term in self._terms.values():
            term.compute(env.step_dt, env.rng)
        end = time.perf_counter()
        self.stage_ms["compute"] = (end - start) * 1e3
        if self._post_compute_terms:
            for term in self._post_compute_terms:
                term.post_compute()
            self.stage_ms["post_compute"] = (time.perf_counter() - end) * 1e3

    def reset(self, rows: np.ndarray) -> None:
        """Resample every term for ``rows``."""
        for term in self._terms.values():
            term.reset(rows, self._env.rng)

    def restart(self) -> None:
        """Forget what the terms kept from a previous run."""
        for term in self._restart_terms:
            term.restart()
