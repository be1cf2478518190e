"""Change points: where did a series of per-sweep medians shift to a new level?

The optimal partition (what PELT finds, computed here exactly by dynamic programming) with the L1
cost (absolute deviations from each segment's median) and segments of at least ``MIN_SEGMENT``
sweeps. With the L1 cost a single odd sweep cannot pay for a segment of its own: in a short segment
with its neighbours it costs as much as where it is (its distance to a median), so an outlier sweep
is not a change point, while a shift that lasts costs every later sweep and is found. The penalty
per change point is ``PENALTY_SIGMAS * sigma * log(n)`` (a BIC-like penalty in the cost's units),
with sigma a robust noise scale of the series: the median absolute difference of consecutive values
/ (0.6745 * sqrt 2), which shifts and outliers barely move. docs/design.md ("Change points") says
why this and not a t-test segmentation."""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from orchestrator.analysis.stats import compare

MIN_SEGMENT = 3  # sweeps; a change point needs this many sweeps on each side
PENALTY_SIGMAS = 2.0
MAX_SWEEPS = 200  # per side, the latest: what a history's plot can show; the search takes ~30 ms for 200
_MAD_TO_SIGMA = 1.0 / (0.6745 * math.sqrt(2.0))  # of consecutive differences of Gaussian noise


@dataclass(frozen=True)
class Segment:
    """``values[start:end]`` share one level (their median)."""

    start: int
    end: int
    level: float


def noise_scale(values: np.ndarray) -> float:
    """A robust scale of the noise around the levels of ``values`` (0 when it cannot be told)."""
    if len(values) < 3:
        return 0.0
    return float(np.median(np.abs(np.diff(values)))) * _MAD_TO_SIGMA


def segments(values: Sequence[float]) -> list[Segment]:
    """The levels of ``values`` (oldest first, finite) split at their change points."""
    series = np.asarray(values, dtype=float)
    n = len(series)
    if n < 2 * MIN_SEGMENT:
        return [Segment(0, n, float(np.median(series)))] if n else []
    sigma = noise_scale(series)
    if sigma == 0.0:  # constant differences (e.g. identical values): use a scale of the values
        sigma = max(float(np.std(series)), 1e-12 * max(1.0, float(np.max(np.abs(series)))))
    penalty = PENALTY_SIGMAS * sigma * math.log(n)
    ends = _optimal_ends(series, penalty)
    starts = [0, *ends[:-1]]
    return [Segment(s, e, float(np.median(series[s:e]))) for s, e in zip(starts, ends, strict=True)]


def _l1_costs(series: np.ndarray, start: int) -> np.ndarray:
    """``costs[end]``: the sum of absolute deviations of ``series[start:end]`` from its median, for
    every ``end`` (0 where the segment is shorter than ``MIN_SEGMENT``). Any value between the two
    middle ones of an even segment gives the same sum, so the lower middle serves."""
    n = len(series)
    costs = np.zeros(n + 1)
    ordered: list[float] = []
    for end in range(start + 1, n + 1):
        bisect.insort(ordered, float(series[end - 1]))
        if end - start >= MIN_SEGMENT:
            half = len(ordered) // 2
            # sum above the median minus sum below it; the middle of an odd segment counts nowhere
            costs[end] = sum(ordered[len(ordered) - half:]) - sum(ordered[:half])
    return costs


def _optimal_ends(series: np.ndarray, penalty: float) -> list[int]:
    """The segment ends (the last is ``len(series)``) minimising the sum of the segments' L1 costs
    plus ``penalty`` per segment, every segment at least ``MIN_SEGMENT`` long; exact (dynamic
    programming over every admissible split), the earliest split winning a tie."""
    n = len(series)
    best = np.full(n + 1, np.inf)  # best[t]: the least total cost of series[:t]
    best[0] = 0.0
    previous = np.zeros(n + 1, dtype=int)
    costs = np.array([_l1_costs(series, start) for start in range(n - MIN_SEGMENT + 1)])  # [start, end]
    for end in range(MIN_SEGMENT, n + 1):
        last = end - MIN_SEGMENT + 1  # a segment ending at ``end`` starts before this
        totals = best[:last] + costs[:last, end] + penalty  # inf where series[:start] cannot be split
        pick = int(np.argmin(totals))  # the first of equal totals: the earliest split
        best[end], previous[end] = totals[pick], pick
    ends, end = [], n
    while end > 0:
        ends.append(end)
        end = int(previous[end])
    return ends[::-1]


@dataclass(frozen=True)
class Shift:
    """A change point of one side's metric: sweep ``sweep_id`` starts a new level."""

    side: str
    sweep_id: str
    started_at: object  # the first run of that sweep (a pandas Timestamp)
    before: float  # the level of the segment before
    after: float  # the level of the segment it starts
    low: float = math.nan  # the 95 % interval of after / before (``level_interval``)
    high: float = math.nan

    @property
    def change(self) -> float:
        return self.after / self.before - 1.0 if self.before else math.nan


def level_interval(before: np.ndarray, after: np.ndarray) -> tuple[float, float]:
    """The 95 % interval of the ratio of two adjacent segments' levels: the two-sample t-interval of
    their per-sweep medians' logs (``analysis.intervals``, trimmed where both have 10 sweeps), each
    sweep one value, so the sweeps' own offsets are its noise. Its ratio is the ratio of the two
    segments' medians, the levels ``Shift`` states. Given where a change point is, it covers the
    true ratio as a 95 % interval should (``tests/orchestrator/test_changepoints.py``); it says
    nothing of whether there is a change at all (a change point found in a flat history gets an
    interval that excludes 1: the search chose the split that looks most like one)."""
    comparison = compare(after, before, rank_test=False)
    return comparison.low, comparison.high


def sweep_shifts(runs: pd.DataFrame, metric: str) -> list[Shift]:
    """The change points of ``metric`` of every side over its sweeps, oldest first.

    ``runs`` needs ``side``, ``sweep_id``, ``status``, ``started_at`` and ``metric``; a side's
    series is the median of its ok runs per sweep, sweeps ordered by their first run (the latest
    ``MAX_SWEEPS`` of them).
    """
    ok = runs[(runs["status"] == "ok") & runs["started_at"].notna()]
    shifts = []
    for side, mine in ok.groupby("side", sort=False):
        per_sweep = mine.groupby("sweep_id").agg(started_at=("started_at", "min"),
                                                 value=(metric, "median")).dropna().sort_values("started_at")
        per_sweep = per_sweep.tail(MAX_SWEEPS)
        values = per_sweep["value"].to_numpy()
        found = segments(values)
        for before, after in zip(found, found[1:], strict=False):
            row = per_sweep.iloc[after.start]
            low, high = level_interval(values[before.start:before.end], values[after.start:after.end])
            shifts.append(Shift(str(side), str(per_sweep.index[after.start]), row["started_at"],
                                before.level, after.level, low, high))
    return sorted(shifts, key=lambda s: s.started_at)
