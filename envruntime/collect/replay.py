"""A preallocated float32 replay ring buffer filled by vectorised slice copies, straight into its slots.

A transition arrives in two halves because the env overwrites its observation arrays on every
step: ``put_obs`` writes the observation the policy acts on (before ``env.step``) directly into
the ring rows the transition will occupy, and ``put_transition`` writes action, reward, flags and
``next_obs`` into the same rows, then advances the cursor. ``next_obs`` is the step's ``obs`` with
the done rows replaced by their true terminal observation (``final_obs``/``done_rows``, the
VecEnv contract of ``envruntime.envs.vecenv``): one full-width copy plus ``k`` rows, no staging.
Between the two calls the pending rows are not counted in ``size`` (the oldest transitions they
overwrite are gone, the new one is not complete yet), so a sampler reading ``size`` rows behind
the cursor never sees a half-written transition. A batch that crosses the end of the ring is split
into two slice copies (wrap-around); no per-row Python loops. ``bytes_written`` counts every byte
copied into the ring (the copy benchmark reads it).
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
        self.bytes_written = 0  # bytes copied into the ring so far
        self._pending = 0  # rows written by put_obs and not yet completed by put_transition

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

    def _write(self, dst: np.ndarray, src: np.ndarray, spans: list[tuple[slice, slice]]) -> None:
        for ring_rows, batch_rows in spans:
            dst[ring_rows] = src[batch_rows]
        self.bytes_written += len(src) * dst[0].nbytes

    def put_obs(self, obs: dict[str, np.ndarray]) -> None:
        """Write the next transition's observation into its ring rows (before the env overwrites it)."""
        n = len(next(iter(obs.values())))
        spans = self._spans(n)
        for group, ring in self.obs.items():
            self._write(ring, obs[group], spans)
        self.size = min(self.size, self.capacity - n)  # the pending rows hold no complete transition
        self._pending = n

    def put_transition(self, action: np.ndarray, reward: np.ndarray, terminated: np.ndarray,
                       truncated: np.ndarray, next_obs: dict[str, np.ndarray],
                       final_obs: dict[str, np.ndarray] | None = None,
                       done_rows: np.ndarray | None = None) -> None:
        """Complete the pending rows with this step's results; advance the cursor. ``next_obs`` is
        the step's (post-reset) ``obs``; ``final_obs`` holds the pre-reset rows of ``done_rows``."""
        n = len(action)
        if self._pending != n:
            raise RuntimeError(f"put_transition of {n} rows needs a put_obs of {n} rows first")
        spans = self._spans(n)
        self._write(self.action, action, spans)
        self._write(self.reward, reward, spans)
        self._write(self.terminated, terminated, spans)
        self._write(self.truncated, truncated, spans)
        for group, array in self.next_obs.items():
            self._write(array, next_obs[group], spans)
        if done_rows is not None and len(done_rows) and final_obs is not next_obs:
            ring_rows = (self.cursor + done_rows) % self.capacity
            for group, array in self.next_obs.items():
                array[ring_rows] = final_obs[group]
                self.bytes_written += len(done_rows) * array[0].nbytes
        self.cursor = (self.cursor + n) % self.capacity
        self.size = min(self.size + n, self.capacity)
        self._pending = 0
