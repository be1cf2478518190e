"""Small pure statistics over per-run values (one value per run, e.g. each run's mean physics_ms).

NaN inputs are dropped; an empty input gives NaN summaries. Room is left for interval estimates
(bootstrap CIs of ratios) and rank tests (Mann-Whitney) next to these.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np


def clean(values: Iterable[float | None]) -> np.ndarray:
    """The finite values as a float array (None and NaN dropped)."""
    arr = np.asarray([np.nan if v is None else v for v in values], dtype=float)
    return arr[np.isfinite(arr)]


def median(values: Iterable[float | None]) -> float:
    arr = clean(values)
    return float(np.median(arr)) if arr.size else math.nan


def minimum(values: Iterable[float | None]) -> float:
    arr = clean(values)
    return float(arr.min()) if arr.size else math.nan


def maximum(values: Iterable[float | None]) -> float:
    arr = clean(values)
    return float(arr.max()) if arr.size else math.nan


def cv(values: Iterable[float | None]) -> float:
    """Population coefficient of variation: std (ddof=0) / mean; NaN when empty or the mean is 0."""
    arr = clean(values)
    if not arr.size:
        return math.nan
    mean = float(arr.mean())
    return float(arr.std(ddof=0)) / abs(mean) if mean != 0 else math.nan


def ratio(candidate: float, baseline: float) -> float:
    """``candidate / baseline``; NaN when either is NaN or the baseline is 0."""
    if math.isnan(candidate) or math.isnan(baseline) or baseline == 0:
        return math.nan
    return candidate / baseline


@dataclass(frozen=True)
class Summary:
    """median, [min, max] and population CV of one metric over one side's runs of one case."""

    n: int
    median: float
    min: float
    max: float
    cv: float


def summarize(values: Iterable[float | None]) -> Summary:
    arr = clean(values)
    return Summary(n=int(arr.size), median=median(arr), min=minimum(arr), max=maximum(arr), cv=cv(arr))
