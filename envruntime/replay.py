"""A preallocated float32 replay ring buffer filled by vectorised slice copies.

A transition is written in two halves because the env overwrites its observation arrays on
every step: ``put_obs`` copies the observation the policy acts on (before ``env.step``), and
``put_transition`` copies action, reward, flags and ``next_obs`` (the true terminal observation
for done rows) into the same rows, then advances the cursor. A batch that crosses the end of the
ring is split into two slice copies (wrap-around); no per-row Python loops.
"""

from __future__ import annotations

import numpy as np


def _filled(shape: tuple[int, ...]) -> np.ndarray:
    """A float32 array whose pages are committed now, so inserts never pay first-touch faults."""
    array = np.empty(shape, dtype=np.float32)
    array.fill(0.0)
    return array


class ReplayBuffer:
    """Ring of ``capacity`` rows of obs/next_obs per group, action, reward, terminated, truncated."""

    def __init__(self, capacity: int, obs_dims: dict[str, int], action_dim: int) -> None:
        if capacity <= 0:
            raise ValueError(f"replay capacity must be positive, got {capacity}")
        self.capacity = capacity
        self.obs = {group: _filled((capacity, dim)) for group, dim in obs_dims.items()}
        self.next_obs = {group: _filled((capacity, dim)) for group, dim in obs_dims.items()}
        self.action = _filled((capacity, action_dim))
        self.reward = _filled((capacity,))
        self.terminated = _filled((capacity,))
        self.truncated = _filled((capacity,))
        self.cursor = 0  # first row the next transition goes to
        self.size = 0  # rows holding a complete transition

    @property
    def nbytes(self) -> int:
        """Bytes held by all preallocated arrays."""
        arrays = [*self.obs.values(), *self.next_obs.values(), self.action, self.reward,
                  self.terminated, self.truncated]
        return sum(a.nbytes for a in arrays)

    def _spans(self, n: int) -> list[tuple[slice, slice]]:
        """(ring rows, batch rows) pairs covering ``n`` rows from the cursor, split at the end."""
        if n > self.capacity:
            raise ValueError(f"batch of {n} rows exceeds replay capacity {self.capacity}")
        first = min(n, self.capacity - self.cursor)
        spans = [(slice(self.cursor, self.cursor + first), slice(0, first))]
        if first < n:
            spans.append((slice(0, n - first), slice(first, n)))
        return spans

    @staticmethod
    def _copy(dst: np.ndarray, src: np.ndarray, spans: list[tuple[slice, slice]]) -> None:
        for ring_rows, batch_rows in spans:
            dst[ring_rows] = src[batch_rows]

    def put_obs(self, obs: dict[str, np.ndarray]) -> None:
        """Copy the observation of the next transition (before the env overwrites it)."""
        spans = self._spans(len(next(iter(obs.values()))))
        for group, array in self.obs.items():
            self._copy(array, obs[group], spans)

    def put_transition(self, action: np.ndarray, reward: np.ndarray, terminated: np.ndarray,
                       truncated: np.ndarray, next_obs: dict[str, np.ndarray]) -> None:
        """Complete the rows started by ``put_obs`` and advance the cursor."""
        n = len(action)
        spans = self._spans(n)
        self._copy(self.action, action, spans)
        self._copy(self.reward, reward, spans)
        self._copy(self.terminated, terminated, spans)
        self._copy(self.truncated, truncated, spans)
        for group, array in self.next_obs.items():
            self._copy(array, next_obs[group], spans)
        self.cursor = (self.cursor + n) % self.capacity
        self.size = min(self.size + n, self.capacity)
