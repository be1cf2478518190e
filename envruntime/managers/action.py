"""Action manager: splits the policy action among its terms, which write the backend controls;
keeps the current and previous action (the action-rate reward and last-action observation)."""

from __future__ import annotations

from typing import Any

import numpy as np

from envruntime.managers.terms import ActionTermCfg, build


class ActionManager:
    def __init__(self, terms: dict[str, ActionTermCfg], env: Any) -> None:
        self._cfgs = terms
        self._env = env
        self._terms: list[tuple[slice, Any]] = []
        n = env.num_envs
        self.ctrl = np.zeros((n, env.backend.info.nu), dtype=env.backend.dtype)
        self.dim = 0
        self.action = np.zeros((n, 0), dtype=np.float32)
        self.prev_action = np.zeros((n, 0), dtype=np.float32)

    def resolve(self) -> None:
        """Build the terms (called once every manager exists)."""
        start = 0
        for name, cfg in self._cfgs.items():
            term = build(cfg, self._env, "action", name)
            self._terms.append((slice(start, start + term.dim), term))
            start += term.dim
        self.dim = start
        self.action = np.zeros((self._env.num_envs, start), dtype=np.float32)
        self.prev_action = np.zeros_like(self.action)

    def process(self, action: np.ndarray) -> None:
        """Shift the history, store ``action`` (N, dim) and compute ``ctrl``."""
        if action.shape != self.action.shape:
            raise ValueError(f"action must have shape {self.action.shape}, got {action.shape}")
        self.prev_action[...] = self.action
        self.action[...] = action
        for cols, term in self._terms:
            term(self.action[:, cols], self.ctrl)

    def reset(self, rows: np.ndarray) -> None:
        """Zero the action history of ``rows``."""
        self.action[rows] = 0.0
        self.prev_action[rows] = 0.0
