"""A benchmark's samples held in bounded memory (docs/design.md, "Suites"): every value counts in the
mean, at most ``limit`` of them are kept as step rows.

A suite tool may write hundreds of thousands of samples per benchmark (pytest-benchmark's per-round
``stats.data``). ``Samples`` takes them in blocks as they are read: the count and the sum of all of
them (``math.fsum`` per block of at most ``BLOCK``, the blocks' sums added with ``math.fsum`` again,
so within a few units in the last place of the exact mean), and an evenly spaced subset: every
``stride``-th value from the first, ``stride`` the smallest power of two that keeps at most
``limit``. The first value that is not a finite number >= 0 is kept as ``problem`` for the reader to
name; values after it are not counted.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

STEP_ROWS = 1000  # step rows kept per case by default (the sweep's max_steps, when lower)
BLOCK = 65536  # values summed per math.fsum call


class Samples:
    """The samples of one benchmark and metric: ``count``, ``mean`` and the ``rows`` kept."""

    __slots__ = ("limit", "stride", "problem", "_count", "_kept", "_sums", "_block")

    def __init__(self, limit: int = STEP_ROWS) -> None:
        self.limit = max(1, limit)
        self._count = 0
        self.stride = 1
        self.problem: tuple[int, object] | None = None  # (index, value) of the first value refused
        self._kept: list[float] = []
        self._sums: list[float] = []
        self._block: list[float] = []

    @classmethod
    def of(cls, values: Sequence[object], limit: int = STEP_ROWS) -> Samples:
        """``values`` (a whole list already read, any items) as samples."""
        samples = cls(limit)
        numbers = next((i for i, v in enumerate(values) if type(v) not in (float, int)), len(values))
        for start in range(0, numbers, BLOCK):
            samples.add_numbers(values[start:min(start + BLOCK, numbers)])
        if numbers < len(values):
            samples.refuse(values[numbers])
        return samples

    def add(self, number: float) -> None:
        """One more number (an int or a float; buffered: a block at a time is checked and summed)."""
        self._block.append(number)
        if len(self._block) >= BLOCK:
            self._flush()

    def add_numbers(self, numbers: Sequence[object]) -> None:
        """More numbers (ints and floats), in order."""
        self._flush()
        self._take(list(numbers))

    def refuse(self, value: object) -> None:
        """The next item is ``value``, which is not a number: the problem unless one came before."""
        self._flush()
        if self.problem is None:
            self.problem = (self._count, value)

    @property
    def count(self) -> int:
        """How many values were taken (those after a ``problem`` are not)."""
        self._flush()
        return self._count

    @property
    def mean(self) -> float:
        """The mean of every value taken (NaN for none)."""
        self._flush()
        return math.fsum(self._sums) / self._count if self._count else math.nan

    def rows(self, scale: float = 1.0) -> list[tuple[int, float]]:
        """The kept values times ``scale``, each with its index among all the samples."""
        self._flush()
        return [(i * self.stride, value * scale) for i, value in enumerate(self._kept)]

    def _flush(self) -> None:
        if self._block:
            block, self._block = self._block, []
            self._take(block)

    def _take(self, block: list) -> None:
        if self.problem is not None or not block:
            return
        total = _checked_sum(block)
        if total is None:
            bad = next(i for i, v in enumerate(block) if not _is_time(v))
            self.problem = (self._count + bad, block[bad])
            block = block[:bad]
            total = math.fsum(block)
        first = -self._count % self.stride
        self._kept.extend(block[first::self.stride])
        self._count += len(block)
        self._sums.append(total)
        while len(self._kept) > self.limit:
            self.stride *= 2
            self._kept = self._kept[::2]


def _checked_sum(block: list) -> float | None:
    """The correctly rounded sum of ``block`` (ints and floats) when every value is finite and >= 0,
    else None."""
    try:
        total = math.fsum(block)
    except (OverflowError, ValueError):  # an int too large for a float; inf - inf
        return None
    return total if math.isfinite(total) and min(block) >= 0 else None


def _is_time(value: object) -> bool:
    if type(value) not in (float, int):
        return False
    try:
        return math.isfinite(value) and value >= 0  # type: ignore[arg-type]
    except OverflowError:
        return False
