"""Command manager: named command terms (e.g. a velocity ``twist``), resampled on reset and when
their per-env timer runs out."""

from __future__ import annotations

from typing import Any

import numpy as np

from envruntime.managers.terms import CommandTermCfg, build


class CommandManager:
    def __init__(self, terms: dict[str, CommandTermCfg], env: Any) -> None:
        self._cfgs = terms
        self._env = env
        self._terms: dict[str, Any] = {}

    def resolve(self) -> None:
        """Build the terms (called once every manager exists)."""
        self._terms = {name: build(cfg, self._env, "command", name) for name, cfg in self._cfgs.items()}

    def term(self, name: str) -> Any:
        """The command term ``name``."""
        if name not in self._terms:
            raise KeyError(f"no command {name!r}; commands: {', '.join(self._cfgs)}")
        return self._terms[name]

    def command(self, name: str) -> np.ndarray:
        """The (N, dim) values of command ``name``."""
        return self.term(name).command

    def compute(self) -> None:
        """Advance every term by one control step."""
        for term in self._terms.values():
            term.compute(self._env.step_dt, self._env.rng)

    def reset(self, rows: np.ndarray) -> None:
        """Resample every term for ``rows``."""
        for term in self._terms.values():
            term.reset(rows, self._env.rng)
