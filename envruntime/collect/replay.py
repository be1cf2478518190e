"""A preallocated float32 replay ring buffer filled by vectorised slice copies.

A transition arrives in two halves because the env overwrites its observation arrays on
every step: ``put_obs`` copies the observation the policy acts on into a staging buffer (before
``env.step``; staging keeps the oldest complete rows intact until they are really replaced), and
``put_transition`` writes it with action, reward, flags and ``next_obs`` (the true terminal
observation for done rows) into the ring, then advances the cursor. A batch that crosses the end
of the ring is split into two slice copies (wrap-around); no per-row Python loops.
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
        self._staged: dict[str, np.ndarray] = {}
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
        """Stage a copy of the next transition's observation (before the env overwrites it)."""
        n = len(next(iter(obs.values())))
        for group, ring in self.obs.items():
            staged = self._staged.get(group)
            if staged is None or len(staged) != n:
                staged = self._staged[group] = np.empty((n, ring.shape[1]), dtype=np.float32)
            np.copyto(staged, obs[group])

    def put_transition(self, action: np.ndarray, reward: np.ndarray, terminated: np.ndarray,
                       truncated: np.ndarray, next_obs: dict[str, np.ndarray]) -> None:
        """Write the staged observation and this step's results to the ring; advance the cursor."""
        n = len(action)
        if not self._staged or len(next(iter(self._staged.values()))) != n:
            raise RuntimeError(f"put_transition of {n} rows needs a put_obs of {n} rows first")
        spans = self._spans(n)
        for group, array in self.obs.items():
            self._copy(array, self._staged[group], spans)
        self._copy(self.action, action, spans)
        self._copy(self.reward, reward, spans)
        self._copy(self.terminated, terminated, spans)
        self._copy(self.truncated, truncated, spans)
        for group, array in self.next_obs.items():
            self._copy(array, next_obs[group], spans)
        self.cursor = (self.cursor + n) % self.capacity
        self.size = min(self.size + n, self.capacity)
