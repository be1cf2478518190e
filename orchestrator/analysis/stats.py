"""Small pure statistics over per-run values (one value per run, e.g. each run's mean physics_ms).

NaN inputs are dropped; an empty input gives NaN summaries. ``compare`` estimates how a candidate
side relates to the baseline: the ratio of medians, a confidence interval of the ratio on the log
scale (``intervals``: a trimmed t over per-round log ratios when the runs are paired, a two-sample
trimmed t over log values otherwise), and a two-sided rank-test p-value (Wilcoxon signed-rank over
the per-round log ratios when paired, Mann-Whitney U otherwise).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

import numpy as np

from orchestrator.analysis import intervals, rank_tests


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
    return summarize_rows(clean(values)[None, :])[0]


def summarize_rows(values: np.ndarray) -> list[Summary]:
    """``summarize`` of each row of ``values[m, n]`` (finite), with the same arithmetic row by row."""
    m, n = values.shape
    if not n:
        return [Summary(n=0, median=math.nan, min=math.nan, max=math.nan, cv=math.nan)] * m
    means = values.mean(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        cvs = np.where(means != 0, values.std(axis=1, ddof=0) / np.abs(means), np.nan)
    columns = (np.median(values, axis=1), values.min(axis=1), values.max(axis=1), cvs)
    return [Summary(n, *map(float, row)) for row in zip(*columns, strict=True)]


DEFAULT_CONFIDENCE = 0.95


@dataclass(frozen=True)
class Comparison:
    """Candidate against baseline: ratio of medians, an interval of the ratio, a rank-test p-value.

    The interval is ``exp(center +- t(df) * se)`` on the log scale (``bounds`` gives it at any
    confidence; ``low``/``high`` hold it at ``confidence``); ``estimate`` is ``exp(center)``, the
    trimmed geometric mean ratio the interval is centred on. ``low``/``high`` are NaN when no
    interval exists (fewer than 2 values on a side, or a value <= 0). ``paired``: by round.
    """

    ratio: float
    low: float
    high: float
    confidence: float
    p_value: float
    n_candidate: int
    n_baseline: int
    paired: bool
    method: str = ""
    estimate: float = math.nan
    center: float = math.nan
    se: float = math.nan
    df: float = math.nan
    floor: float = 0.0  # a half-width at every confidence (``intervals.count_range``)

    @property
    def has_interval(self) -> bool:
        return not (math.isnan(self.low) or math.isnan(self.high))

    def bounds(self, confidence: float) -> tuple[float, float]:
        """The interval at another two-sided ``confidence`` (NaN when there is none)."""
        if not self.has_interval:
            return math.nan, math.nan
        low, high = intervals.LogInterval(np.asarray(self.center), np.asarray(self.se),
                                          np.asarray(self.df), self.floor).bounds(confidence)
        return float(low), float(high)

    def at(self, confidence: float) -> Comparison:
        """This comparison with its interval at ``confidence``."""
        low, high = self.bounds(confidence)
        return replace(self, low=low, high=high, confidence=confidence)


def rank_p(candidate: np.ndarray, baseline: np.ndarray, *, paired: bool) -> float:
    """Two-sided rank-test p-value: Wilcoxon signed-rank of the per-round log ratios when ``paired``
    (exact for small samples), Mann-Whitney U otherwise; NaN when a side is empty."""
    if not (candidate.size and baseline.size):
        return math.nan
    if not paired:
        return rank_tests.mann_whitney_p(candidate, baseline)
    with np.errstate(divide="ignore", invalid="ignore"):
        differences = np.log(candidate) - np.log(baseline)
    differences = differences[np.isfinite(differences)]
    if not differences.any():
        return 1.0  # no round differs: nothing speaks against equality
    return rank_tests.wilcoxon_p(differences)


def has_log_interval(cand: np.ndarray, base: np.ndarray) -> bool:
    """Whether ``cand`` and ``base`` have an interval: 2 values each or more, all positive."""
    return min(cand.size, base.size) >= 2 and bool(np.all(cand > 0) and np.all(base > 0))


def log_interval(cand: np.ndarray, base: np.ndarray, *, paired: bool) -> intervals.LogInterval | None:
    """The interval of ``cand`` against ``base`` (see ``intervals``); None without one."""
    if not has_log_interval(cand, base):
        return None
    if paired:
        return intervals.paired(np.log(cand) - np.log(base))
    return intervals.unpaired(np.log(cand), np.log(base))


def aligned(candidate: Iterable[float | None], baseline: Iterable[float | None], *,
            paired: bool) -> tuple[np.ndarray, np.ndarray]:
    """The finite values of both sides; ``paired``: equal-length sequences aligned by round, a round
    with a missing value on either side dropped from both."""
    if not paired:
        return clean(candidate), clean(baseline)
    cand = np.asarray([np.nan if v is None else v for v in candidate], dtype=float)
    base = np.asarray([np.nan if v is None else v for v in baseline], dtype=float)
    if cand.shape != base.shape:
        raise ValueError(f"paired samples differ in length: {cand.size} vs {base.size}")
    both = np.isfinite(cand) & np.isfinite(base)
    return cand[both], base[both]


MIN_RUNS = 2  # values per sample for the interval of a change between batches


def change_interval(after: Iterable[float | None], before: Iterable[float | None],
                    before_sweeps: list[Iterable[float | None]] | None = None) -> Comparison:
    """``after`` against ``before`` as independent runs (``compare`` of two sweeps, drift); no interval
    with fewer than ``MIN_RUNS`` of either. ``before_sweeps``: ``before`` split by the sweep each ran in,
    whose sweep-to-sweep noise then widens the interval (``intervals.with_sweep_offsets``). No rank
    test (its p-value is NaN): the interval is what a change is judged by."""
    cand, base = clean(after), clean(before)
    own = log_interval(cand, base, paired=False)
    if own is None or min(cand.size, base.size) < MIN_RUNS:
        return replace(compare(cand, base, rank_test=False), low=math.nan, high=math.nan)
    if not before_sweeps:
        return compare(cand, base, rank_test=False)
    sweeps = [np.log(values) for values in map(clean, before_sweeps)]
    return compare(cand, base, interval=intervals.with_sweep_offsets(own, sweeps), rank_test=False,
                   method="two-sample t of log values, widened by the earlier sweeps' offsets")


def compare(candidate: Iterable[float | None], baseline: Iterable[float | None], *, paired: bool = False,
            confidence: float = DEFAULT_CONFIDENCE,
            interval: intervals.LogInterval | None = None, method: str | None = None,
            rank_test: bool = True, ratio_of_interval: bool = False) -> Comparison:
    """Candidate against baseline (see ``aligned`` for ``paired``). ``interval`` replaces the cell's
    own one (e.g. with the sweep's pooled noise, ``method`` saying so); ``rank_test=False``: no
    p-value (NaN), which is the slow part. ``ratio_of_interval``: the ratio is the replacing
    interval's estimate, not the ratio of the runs' medians (lockstep: the runs' figures are not
    what the interval compares). ``compare_rows`` of one row."""
    cand, base = aligned(candidate, baseline, paired=paired)
    if interval is not None:
        interval = intervals.LogInterval(*(np.reshape(part, 1) for part in (interval.center, interval.se,
                                                                             interval.df, interval.floor)))
    rows = compare_rows(cand[None, :], base[None, :], paired=paired, interval=interval, method=method,
                        ratio_of_interval=ratio_of_interval)
    return rows.comparison(0, confidence, rank_test)


@dataclass(frozen=True)
class Comparisons:
    """``compare`` of many cells of one shape at once (``compare_rows``), as columns; ``comparison``
    gives one cell's. Intervals at a confidence and p-values are computed for every row at once, on
    first use."""

    candidate: np.ndarray  # [m, n1]
    baseline: np.ndarray  # [m, n2]
    paired: bool
    ratio: np.ndarray
    interval: intervals.LogInterval  # NaN where a row has none
    method: str  # of the rows with an interval
    _bounds: dict[float, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict, repr=False)

    @functools.cached_property
    def p_values(self) -> np.ndarray:
        return rank_p_rows(self.candidate, self.baseline, paired=self.paired)

    @functools.cached_property
    def estimates(self) -> np.ndarray:
        return np.exp(self.interval.center)

    def bounds(self, confidence: float) -> tuple[np.ndarray, np.ndarray]:
        """Every row's interval at ``confidence`` (NaN where none)."""
        if confidence not in self._bounds:
            with np.errstate(invalid="ignore"):
                self._bounds[confidence] = self.interval.bounds(confidence)
        return self._bounds[confidence]

    def comparison(self, i: int, confidence: float, rank_test: bool = True) -> Comparison:
        """Row ``i``'s ``Comparison``, its interval at ``confidence``; ``rank_test=False``: no p-value."""
        common = dict(ratio=float(self.ratio[i]), confidence=confidence,
                      p_value=float(self.p_values[i]) if rank_test else math.nan,
                      n_candidate=self.candidate.shape[1], n_baseline=self.baseline.shape[1],
                      paired=self.paired)
        if math.isnan(self.interval.center[i]):
            return Comparison(low=math.nan, high=math.nan, **common)
        low, high = self.bounds(confidence)
        return Comparison(low=float(low[i]), high=float(high[i]), method=self.method,
                          estimate=float(self.estimates[i]), center=float(self.interval.center[i]),
                          se=float(self.interval.se[i]), df=float(self.interval.df[i]),
                          floor=float(self.interval.floor[i]), **common)


def compare_rows(cand: np.ndarray, base: np.ndarray, *, paired: bool,
                 interval: intervals.LogInterval | None = None, method: str | None = None,
                 ratio_of_interval: bool = False) -> Comparisons:
    """``compare`` of each row of ``cand[m, n1]`` against the same row of ``base[m, n2]`` (finite
    values; ``paired``: n1 == n2, by round), with the same arithmetic row by row. ``interval``: each
    row's replacing interval (read only where the row has its own)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        medians = [np.median(side, axis=1) if side.shape[1] else np.full(len(side), np.nan)
                   for side in (cand, base)]
        figure = np.where(np.isnan(medians[0]) | np.isnan(medians[1]) | (medians[1] == 0), np.nan,
                          medians[0] / medians[1])
    own = np.zeros(len(cand), dtype=bool)
    if min(cand.shape[1], base.shape[1]) >= 2:
        own = np.all(cand > 0, axis=1) & np.all(base > 0, axis=1)
    center, se, df = (np.full(len(cand), np.nan) for _ in range(3))
    floor = np.zeros(len(cand))
    if own.any():
        if interval is not None:
            found = interval.rows(own)
            if ratio_of_interval:
                figure[own] = np.exp(found.center)
        elif paired:
            found = intervals.paired(np.log(cand[own]) - np.log(base[own]))
        else:
            found = intervals.unpaired(np.log(cand[own]), np.log(base[own]))
        center[own], se[own], df[own], floor[own] = found.center, found.se, found.df, found.floor
    default = "trimmed t of per-round log ratios" if paired else "two-sample trimmed t of log values"
    return Comparisons(cand, base, paired, figure, intervals.LogInterval(center, se, df, floor),
                       method or default)


def rank_p_rows(cand: np.ndarray, base: np.ndarray, *, paired: bool) -> np.ndarray:
    """``rank_p`` of each row of ``cand[m, n1]`` against the same row of ``base[m, n2]``: the rows
    whose test needs nothing but their ranks at once (``rank_tests``), the others one at a time."""
    if not (cand.shape[1] and base.shape[1]):
        return np.full(len(cand), np.nan)
    if not paired:
        return rank_tests.mann_whitney_p_rows(cand, base)
    with np.errstate(divide="ignore", invalid="ignore"):
        differences = np.log(cand) - np.log(base)
    plain = np.isfinite(differences).all(axis=1) & differences.any(axis=1)
    p = np.empty(len(cand))
    if plain.any():
        p[plain] = rank_tests.wilcoxon_p_rows(differences[plain])
    for i in np.flatnonzero(~plain):
        p[i] = rank_p(cand[i], base[i], paired=True)
    return p
