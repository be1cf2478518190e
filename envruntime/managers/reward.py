"""Reward manager: ``reward = sum_k weight_k * step_dt * raw_k`` over weighted terms."""

from __future__ import annotations

from typing import Any

import numpy as np

from envruntime.kernels.reward import weighted_sum
from envruntime.managers.term_rows import TermRows
from envruntime.managers.terms import RewardTermCfg


class RewardManager(TermRows):
    def __init__(self, terms: dict[str, RewardTermCfg], env: Any) -> None:
        n = env.num_envs
        self.raw = np.zeros((len(terms), n))  # term k's raw (N,) values in row k
        super().__init__("reward", terms, env, self.raw)
        self.weights = np.array([cfg.weight * env.step_dt for cfg in terms.values()], dtype=np.float64)
        self.reward = np.zeros(n, dtype=np.float32)

    def compute(self) -> np.ndarray:
        """Evaluate every term for every env and return the (N,) float32 reward."""
        self.fill()
        weighted_sum(self.raw.T, self.weights, self.reward)
        return self.reward
