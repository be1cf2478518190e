"""Small pure statistics over per-run values (one value per run, e.g. each run's mean physics_ms).

NaN inputs are dropped; an empty input gives NaN summaries. ``compare`` estimates how a candidate
side relates to the baseline: the ratio of medians, a seeded percentile-bootstrap confidence interval
of that ratio (rounds resampled jointly when the runs are paired), and a two-sided Mann-Whitney U
p-value.
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


DEFAULT_CONFIDENCE = 0.95
DEFAULT_RESAMPLES = 9999
DEFAULT_SEED = 0


@dataclass(frozen=True)
class Comparison:
    """Candidate against baseline: ratio of medians, its bootstrap interval, Mann-Whitney p-value.

    ``low``/``high`` are NaN when no interval exists (fewer than 2 values on a side, or a baseline
    value of 0, which a resample could turn into a median of 0); ``paired``: rounds were resampled
    jointly.
    """

    ratio: float
    low: float
    high: float
    confidence: float
    p_value: float
    n_candidate: int
    n_baseline: int
    paired: bool

    @property
    def has_interval(self) -> bool:
        return not (math.isnan(self.low) or math.isnan(self.high))


def ratio_of_medians(candidate: np.ndarray, baseline: np.ndarray, axis: int = -1) -> np.ndarray:
    """``median(candidate) / median(baseline)`` along ``axis`` (vectorised for the bootstrap)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.median(candidate, axis=axis) / np.median(baseline, axis=axis)


def bootstrap_ratio_interval(candidate: np.ndarray, baseline: np.ndarray, *, paired: bool,
                             confidence: float = DEFAULT_CONFIDENCE, resamples: int = DEFAULT_RESAMPLES,
                             seed: int = DEFAULT_SEED) -> tuple[float, float]:
    """Percentile-bootstrap interval of the ratio of medians; ``(nan, nan)`` when there is none.

    ``paired``: ``candidate[i]`` and ``baseline[i]`` come from the same round and are resampled
    together, so what disturbed a whole round cancels in the ratio; otherwise each side is
    resampled on its own.
    """
    too_few = min(candidate.size, baseline.size) < 2 or (paired and candidate.size != baseline.size)
    if too_few or not baseline.all():  # a resample of a baseline holding a 0 could have median 0
        return math.nan, math.nan
    from scipy import stats as sps  # imported here: it costs seconds, and most CLI calls never need it

    result = sps.bootstrap((candidate, baseline), ratio_of_medians, paired=paired, vectorized=True,
                           n_resamples=resamples, confidence_level=confidence, method="percentile",
                           rng=np.random.default_rng(seed))
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def mann_whitney_p(candidate: np.ndarray, baseline: np.ndarray) -> float:
    """Two-sided Mann-Whitney U p-value (exact for small samples without ties); NaN when a side is empty."""
    if not (candidate.size and baseline.size):
        return math.nan
    from scipy import stats as sps

    return float(sps.mannwhitneyu(candidate, baseline, alternative="two-sided").pvalue)


def compare(candidate: Iterable[float | None], baseline: Iterable[float | None], *, paired: bool = False,
            confidence: float = DEFAULT_CONFIDENCE, resamples: int = DEFAULT_RESAMPLES,
            seed: int = DEFAULT_SEED) -> Comparison:
    """Candidate against baseline. ``paired``: equal-length sequences aligned by round; a round with
    a missing value on either side is dropped from both."""
    if paired:
        cand = np.asarray([np.nan if v is None else v for v in candidate], dtype=float)
        base = np.asarray([np.nan if v is None else v for v in baseline], dtype=float)
        if cand.shape != base.shape:
            raise ValueError(f"paired samples differ in length: {cand.size} vs {base.size}")
        both = np.isfinite(cand) & np.isfinite(base)
        cand, base = cand[both], base[both]
    else:
        cand, base = clean(candidate), clean(baseline)
    low, high = bootstrap_ratio_interval(cand, base, paired=paired, confidence=confidence,
                                         resamples=resamples, seed=seed)
    return Comparison(ratio=ratio(median(cand), median(base)), low=low, high=high, confidence=confidence,
                      p_value=mann_whitney_p(cand, base), n_candidate=int(cand.size),
                      n_baseline=int(base.size), paired=paired)
