"""Reward manager: ``reward = sum_k weight_k * step_dt * raw_k`` over weighted terms."""

from __future__ import annotations

from typing import Any

import numpy as np

from envruntime.kernels.reward import weighted_sum
from envruntime.managers.terms import RewardTermCfg, build


class RewardManager:
    def __init__(self, terms: dict[str, RewardTermCfg], env: Any) -> None:
        self._cfgs = terms
        self._env = env
        self.term_names = tuple(terms)
        self._fns: list[Any] = []
        n = env.num_envs
        self.raw = np.zeros((len(terms), n))  # term-major, so each term fills a contiguous row
        self.weights = np.array([cfg.weight * env.step_dt for cfg in terms.values()], dtype=np.float64)
        self.reward = np.zeros(n, dtype=np.float32)

    def resolve(self) -> None:
        """Build the terms (called once every manager exists)."""
        self._fns = [build(cfg, self._env, "reward", name) for name, cfg in self._cfgs.items()]

    def compute(self) -> np.ndarray:
        """Evaluate every term for every env and return the (N,) float32 reward."""
        for k, fn in enumerate(self._fns):
            fn(self.raw[k])
        weighted_sum(self.raw.T, self.weights, self.reward)
        return self.reward
