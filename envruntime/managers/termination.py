"""Termination manager: ``terminated`` (terminal states) and ``truncated`` (time limits)."""

from __future__ import annotations

from typing import Any

import numpy as np

from envruntime.kernels.termination import combine
from envruntime.managers.term_rows import TermRows
from envruntime.managers.terms import TerminationTermCfg


class TerminationManager(TermRows):
    def __init__(self, terms: dict[str, TerminationTermCfg], env: Any) -> None:
        n = env.num_envs
        self.flags = np.zeros((len(terms), n), dtype=np.bool_)  # term k's (N,) flags in row k
        super().__init__("termination", terms, env, self.flags)
        self.is_time_out = np.array([cfg.time_out for cfg in terms.values()], dtype=np.bool_)
        self.terminated = np.zeros(n, dtype=np.bool_)
        self.truncated = np.zeros(n, dtype=np.bool_)
        self.done = np.zeros(n, dtype=np.bool_)

    def compute(self) -> np.ndarray:
        """Evaluate every term; return ``done`` = terminated | truncated (N,) bool."""
        self.fill()
        combine(self.flags.T, self.is_time_out, self.terminated, self.truncated)
        np.logical_or(self.terminated, self.truncated, out=self.done)
        return self.done

    def restart(self) -> None:
        """Clear the flags: a new seeded run starts with no episode ended."""
        for flags in (self.flags, self.terminated, self.truncated, self.done):
            flags[...] = False
