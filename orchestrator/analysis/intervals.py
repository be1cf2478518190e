"""Confidence intervals of a candidate/baseline ratio on the log scale, calibrated at every n >= 2.

Run-to-run noise of a benchmark is multiplicative, so everything is computed on log values and the
interval of the log ratio is exponentiated back:

* paired (run ``i`` of both sides ran in round ``i``): a one-sample t-interval of the per-round log
  ratios ``log(cand[i] / base[i])``; whatever slowed a whole round cancels;
* unpaired: a two-sample t-interval of the difference of mean log values, the two sides' variance
  pooled (Welch's interval was measured too conservative at n = 2);
* a change against a history of several sweeps (drift): the unpaired interval widened by the
  sweep-to-sweep variance the history shows beyond its run noise (``with_sweep_offsets``).

Both are the 10 %-trimmed variants (Tukey-McLaughlin for one sample, Yuen for two): the ``g =
floor(0.1 n)`` lowest and highest values are trimmed from the mean and winsorized in the variance,
with ``n - 2g - 1`` degrees of freedom (pooled: the sum over the cells). Below 10 values ``g`` is 0
and they are exactly the classical t intervals; from 10 values on a single disturbed run cannot drag
the interval with it. Two samples are trimmed only when both have 10 values or more: under one-sided
noise (runs slowed by bursts) a trimmed mean and a plain one estimate different centres, so 3 runs
against a history of 30 would see a change that is not there. ``noise: pooled`` replaces every
cell's variance by the sweep's pooled one (same metric), which gives small cells the degrees of
freedom of the whole sweep; valid when every cell has the same run noise.

Instruction counts are measurements, not samples: a benchmark's count moves between processes by
a few instructions in ten million or not at all, so a t interval of 2 rounds, read at an early
look's confidence (1 - 1e-11), would bound nothing as soon as the count moved at all. Where each
side's counts agree within ``COUNT_AGREEMENT`` (relative) the ratio's interval is every ratio the
counts allow, widened by ``COUNT_RESOLUTION``, at every confidence (``count_range``); counts that
vary more are read as samples, by the t intervals above. The error this adds where a count varies
but two rounds happened to agree is measured in ``tests/orchestrator/test_count_resolution.py``.

Every function is vectorised over leading axes (``values[..., n]``) so the seeded coverage
simulations in the tests run thousands of sweeps at once. Coverage is measured in
``tests/orchestrator/test_intervals.py`` (figures in docs/design.md, "Statistics").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from orchestrator.analysis.distributions import t_quantile

TRIM = 0.1
COUNT_AGREEMENT = 1e-6  # a side's counts this close (max / min - 1) read as one measurement
COUNT_RESOLUTION = 1e-4  # ... and the ratio they give as exact within this, each way


@dataclass(frozen=True)
class Spread:
    """The noise of one cell's log values: winsorized variance term and degrees of freedom.

    ``term`` is ``(n - 1) * s_w**2 / (h * (h - 1))`` with ``h = n - 2g`` kept values (Yuen): the
    squared standard error of the trimmed mean; ``df`` is ``h - 1``.
    """

    center: np.ndarray  # trimmed mean of the log values
    term: np.ndarray
    df: np.ndarray
    n: np.ndarray


def trim_count(n: int, trim: float = TRIM) -> int:
    """Values trimmed from each end of ``n``: ``floor(trim * n)``, but never leaving fewer than 2."""
    return max(0, min(int(np.floor(trim * n)), (n - 2) // 2))


def spread(logs: np.ndarray, trim: float = TRIM) -> Spread:
    """Trimmed mean and Yuen's variance term of ``logs[..., n]`` (n >= 2, all finite)."""
    n = logs.shape[-1]
    g = trim_count(n, trim)
    ordered = np.sort(logs, axis=-1)
    kept = ordered[..., g:n - g]
    winsorized = np.clip(ordered, ordered[..., g:g + 1], ordered[..., n - g - 1:n - g])
    h = n - 2 * g
    var_w = winsorized.var(axis=-1, ddof=1)
    shape = kept.shape[:-1]
    return Spread(center=kept.mean(axis=-1), term=(n - 1) * var_w / (h * (h - 1)),
                  df=np.full(shape, float(h - 1)), n=np.full(shape, float(n)))


@dataclass(frozen=True)
class LogInterval:
    """An interval of the log ratio: ``center +- (t * se + floor)`` with ``df`` degrees of freedom;
    ``floor``, a half-width at every confidence, is 0 but for ``count_range``'s."""

    center: np.ndarray
    se: np.ndarray
    df: np.ndarray
    floor: np.ndarray | float = 0.0

    def bounds(self, confidence: float | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(low, high) of the ratio at two-sided ``confidence`` (exponentiated; 0 and infinity where
        a confidence all but 1, an early look's, leaves the ratio unbounded)."""
        half = t_quantile(0.5 + np.asarray(confidence) / 2, self.df) * self.se + self.floor
        with np.errstate(over="ignore"):
            return np.exp(self.center - half), np.exp(self.center + half)

    def rows(self, kept: np.ndarray) -> LogInterval:
        """The interval of the rows ``kept`` selects."""
        return LogInterval(self.center[kept], self.se[kept], self.df[kept],
                           np.broadcast_to(self.floor, np.shape(self.center))[kept])


def paired(log_ratios: np.ndarray, trim: float = TRIM) -> LogInterval:
    """Tukey-McLaughlin trimmed t over per-round log ratios ``[..., n]``."""
    s = spread(log_ratios, trim)
    return LogInterval(center=s.center, se=np.sqrt(s.term), df=s.df)


def unpaired(cand_logs: np.ndarray, base_logs: np.ndarray, trim: float = TRIM) -> LogInterval:
    """Two-sample trimmed t of ``mean(cand_logs) - mean(base_logs)``, the two sides' variance pooled;
    trimmed only when both samples have enough values to be (see the module docstring)."""
    if trim_count(min(cand_logs.shape[-1], base_logs.shape[-1]), trim) == 0:
        trim = 0.0
    cand, base = spread(cand_logs, trim), spread(base_logs, trim)
    variance, df = pooled_variance([cand, base])
    return difference(with_pooled_noise(cand, variance, df), with_pooled_noise(base, variance, df))


def counts_agree(cand_logs: np.ndarray, base_logs: np.ndarray) -> np.ndarray:
    """Whether the counts of log values ``cand_logs[..., n1]`` and ``base_logs[..., n2]`` (2 or more a
    side) each agree within ``COUNT_AGREEMENT``: one measurement a side (``count_range``)."""
    if min(cand_logs.shape[-1], base_logs.shape[-1]) < 2:
        return np.zeros(cand_logs.shape[:-1], dtype=bool)
    tolerance = np.log1p(COUNT_AGREEMENT)
    with np.errstate(invalid="ignore"):  # a count of 0 or less (a log not finite) agrees with nothing
        return (np.ptp(cand_logs, axis=-1) <= tolerance) & (np.ptp(base_logs, axis=-1) <= tolerance)


def count_range(cand_logs: np.ndarray, base_logs: np.ndarray) -> LogInterval:
    """Of counts that agree (``counts_agree``; log values ``[..., n]``): every ratio they allow, from
    the lowest candidate over the highest baseline to the highest over the lowest, widened by
    ``COUNT_RESOLUTION`` each way, at every confidence (its ``se`` is 0, its ``floor`` the half-width)."""
    widen = np.log1p(COUNT_RESOLUTION)
    low = cand_logs.min(axis=-1) - base_logs.max(axis=-1) - widen
    high = cand_logs.max(axis=-1) - base_logs.min(axis=-1) + widen
    return LogInterval(center=(low + high) / 2, se=np.zeros_like(low), df=np.full_like(low, np.inf),
                       floor=(high - low) / 2)


def with_counts(cand_logs: np.ndarray, base_logs: np.ndarray, interval: LogInterval) -> LogInterval:
    """``interval`` of counts (log values ``[..., n]``) with the rows whose counts agree read as
    measurements (``count_range``)."""
    exact, counted = counts_agree(cand_logs, base_logs), count_range(cand_logs, base_logs)

    def pick(mine: np.ndarray, theirs: np.ndarray | float) -> np.ndarray:
        return np.where(exact, mine, theirs)

    return LogInterval(pick(counted.center, interval.center), pick(counted.se, interval.se),
                       pick(counted.df, interval.df), pick(counted.floor, interval.floor))


def with_sweep_offsets(interval: LogInterval, sweeps: list[np.ndarray]) -> LogInterval:
    """``interval`` of one sweep's change against the runs of earlier ``sweeps`` (each its log values),
    widened by the variance of a sweep's level beyond its run noise that the earlier sweeps show
    (their means' variance less their mean squared standard error, never below 0): the current sweep
    carries one such offset and the earlier sweeps' mean ``1 / J`` of one. Degrees of freedom by
    Welch-Satterthwaite, the between-sweep part with ``J - 1``. Fewer than 2 earlier sweeps of 2+
    values cannot show it: ``interval`` unchanged. Scalar intervals only."""
    cells = [spread(logs, trim=0.0) for logs in sweeps if logs.size >= 2]
    if len(cells) < 2:
        return interval
    centers = np.array([float(cell.center) for cell in cells])
    between = float(centers.var(ddof=1)) - float(np.mean([float(cell.term) for cell in cells]))
    if between <= 0:
        return interval
    extra = between * (1 + 1 / len(cells))
    run_term = float(interval.se) ** 2
    total = run_term + extra
    df = total ** 2 / (run_term ** 2 / float(interval.df) + extra ** 2 / (len(cells) - 1))
    return LogInterval(center=interval.center, se=np.sqrt(total), df=np.asarray(df))


def difference(cand: Spread, base: Spread) -> LogInterval:
    """Two independent cells' difference; both carry the same (pooled) variance and df."""
    return LogInterval(center=cand.center - base.center, se=np.sqrt(cand.term + base.term), df=cand.df)


def pooled_variance(spreads: list[Spread]) -> tuple[np.ndarray, np.ndarray]:
    """(pooled winsorized variance, its degrees of freedom) over cells of one metric.

    Each cell's ``term * h * (h - 1) / (n - 1)`` is its winsorized variance ``s_w**2``; they are
    averaged with weights ``h - 1``.
    """
    weighted = sum(s.term * (s.df + 1) * s.df / (s.n - 1) * s.df for s in spreads)
    df = sum(s.df for s in spreads)
    with np.errstate(divide="ignore", invalid="ignore"):
        return weighted / df, df


def with_pooled_noise(cell: Spread, variance: np.ndarray, df: np.ndarray) -> Spread:
    """``cell`` with its variance replaced by the pooled one (its own trimming kept)."""
    h = cell.df + 1
    term = (cell.n - 1) * variance / (h * (h - 1))
    return Spread(center=cell.center, term=term, df=np.broadcast_to(df, cell.df.shape), n=cell.n)
