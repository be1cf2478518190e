"""The summary row of a suite's cases: the geometric mean of their candidate/baseline ratios, with an
interval (docs/design.md, "Suites").

The geometric mean ratio of ``K`` cases is ``exp(mean_k log ratio_k)``. Per round ``r`` each side's
mean log value over the cases, ``A_r = mean_k log cand[k, r]`` and ``B_r = mean_k log base[k, r]``,
is one number, and rounds are independent of each other (whatever the cases of one round share), so
the interval is the ordinary one of those per-round means (``intervals``): paired by round, the
one-sample t of ``A_r - B_r``; unpaired, the two-sample t of ``A`` against ``B``. Only complete
rounds count (every case has its value on both sides; ``summarize_suite`` picks them). Coverage is
measured by seeded simulation in ``tests/orchestrator/test_suite_summary.py``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from orchestrator.analysis import intervals
from orchestrator.analysis.verdicts import PAIRED_ORDERS, Comparer


def geomean_interval(cand_logs: np.ndarray, base_logs: np.ndarray, *, paired: bool) -> intervals.LogInterval:
    """The interval of the geometric mean ratio from log values ``[..., cases, rounds]`` of each side
    (at least 2 rounds)."""
    cand, base = np.asarray(cand_logs, float).mean(axis=-2), np.asarray(base_logs, float).mean(axis=-2)
    return intervals.paired(cand - base) if paired else intervals.unpaired(cand, base)


@dataclass(frozen=True)
class SuiteSummary:
    """A suite's cases of one side and metric, sorted by change, and their geometric mean ratio."""

    side: str
    metric: str
    cases: list[str]  # largest change first (|log ratio| of the medians); cases with no ratio last
    geomean: float  # exp(mean log ratio) over the complete rounds; NaN without 2 of them
    low: float
    high: float
    confidence: float
    rounds: int  # complete rounds: every case has an ok run on both sides
    paired: bool


def summarize_suite(comparer: Comparer, cases: list[str], side: str, metric: str,
                    ratios: dict[str, float], confidence: float = 0.95) -> SuiteSummary:
    """The summary of ``cases`` (ratio of medians per case: ``ratios``) for ``side`` against the
    comparer's baseline."""
    values = {(case, s): comparer.values(case, s, metric)
              for case in cases for s in (side, comparer.baseline)}
    unique = all(series.index.is_unique for series in values.values())
    paired = comparer.order in PAIRED_ORDERS and unique
    complete = sorted(set.intersection(*(set(series.index) for series in values.values()))) if unique else []
    ordered = sorted(cases, key=lambda c: -abs(math.log(ratios[c])) if _positive(ratios[c]) else math.inf)
    summary = SuiteSummary(side=side, metric=metric, cases=ordered, geomean=math.nan, low=math.nan,
                           high=math.nan, confidence=confidence, rounds=len(complete), paired=paired)
    if len(complete) < 2:
        return summary
    cand, base = (np.array([values[case, s].loc[complete].to_numpy(float) for case in cases])
                  for s in (side, comparer.baseline))
    if not (np.all(cand > 0) and np.all(base > 0)):
        return summary
    interval = geomean_interval(np.log(cand), np.log(base), paired=paired)
    low, high = interval.bounds(confidence)
    return replace(summary, geomean=float(np.exp(interval.center)), low=float(low), high=float(high))


def _positive(value: float) -> bool:
    return math.isfinite(value) and value > 0
