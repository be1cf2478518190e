"""Scratch rows for reset states: filled with the default state, edited by reset terms, written to
the backend in one ``reset`` call. Shared by the event manager, the motion command and direct envs."""

from __future__ import annotations

import numpy as np


class ResetStaging:
    """``(num_envs, nq)``/``(num_envs, nv)`` buffers allocated once; ``defaults(k)`` hands out the
    first ``k`` rows holding the default state."""

    def __init__(self, default_qpos: np.ndarray, default_qvel: np.ndarray, num_envs: int) -> None:
        self.default_qpos, self.default_qvel = default_qpos, default_qvel
        self.qpos = np.zeros((num_envs, default_qpos.shape[0]))
        self.qvel = np.zeros((num_envs, default_qvel.shape[0]))

    def defaults(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The first ``k`` staging rows, set to the default state."""
        qpos, qvel = self.qpos[:k], self.qvel[:k]
        qpos[...] = self.default_qpos
        qvel[...] = self.default_qvel
        return qpos, qvel
