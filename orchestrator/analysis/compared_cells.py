"""Every cell of one metric compared against the baseline at once (``verdicts.Comparer``'s work).

A suite of 10,000 benchmarks has 10,000 cells per metric and look; compared one by one, each paid
a few dozen numpy calls on arrays of 3 values and a t quantile of its own (about 10 minutes for a
report). Here the cells are grouped by shape (paired or not, runs per side) and each group is one
``stats.compare_rows``: the same arithmetic, row by row, so every figure is the one a single
comparison gives. What replaces a cell's own interval is computed per group too: a lockstep
round's block-pair estimate (``block_pairs``), ``noise: pooled``'s sweep-wide variance, pooled
over the cells in the order the sweep's rows give them (the sum is the same to the last bit), and
for instruction counts that agree, the range they allow (``intervals.count_range``: such cells are
a group of their own).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from orchestrator.analysis import intervals, stats
from orchestrator.analysis.cells import Cell

Shape = tuple[bool, int, int, bool]  # (paired, candidate runs, baseline runs, counts that agree)
LOCKSTEP_METHOD = "trimmed t of per-round block-pair medians (lockstep)"
COUNT_METHOD = (f"counts agreeing within {intervals.COUNT_AGREEMENT:g}: every ratio they allow, "
                f"+- {intervals.COUNT_RESOLUTION:g}")


@dataclass(frozen=True)
class CellSample:
    """One cell's runs to compare: the finite values of each side (``paired``: of the rounds both
    ran, in round order); ``round_logs``: a paired lockstep cell's per-round log ratios, which its
    interval reads instead of the runs' (None: the runs' log ratios)."""

    candidate: np.ndarray
    baseline: np.ndarray
    paired: bool
    round_logs: np.ndarray | None = None


class ComparedCells:
    """The comparisons of ``samples`` (one metric, one look), in the sweep's ``noise`` mode;
    ``lockstep``: paired cells are lockstep rounds, their ratio the interval's estimate; ``counts``:
    the metric is an instruction count (cells whose counts agree: ``intervals.count_range``)."""

    def __init__(self, samples: dict[Cell, CellSample], noise: str = "cell", lockstep: bool = False,
                 counts: bool = False):
        groups: dict[Shape, list[Cell]] = defaultdict(list)
        for cell, sample in samples.items():
            exact = counts and _counts_agree(sample)
            groups[sample.paired, sample.candidate.size, sample.baseline.size, exact].append(cell)
        stacked = {shape: _Group(shape, [samples[cell] for cell in cells]) for shape, cells in groups.items()}
        pooled = _pooled_noise(samples, groups, stacked) if noise == "pooled" else None
        self._found: dict[Cell, tuple[stats.Comparisons, int]] = {}
        for shape, cells in groups.items():
            rows = stacked[shape].compare(pooled, lockstep)
            self._found |= {cell: (rows, i) for i, cell in enumerate(cells)}

    def comparison(self, cell: Cell, confidence: float, rank_test: bool = True) -> stats.Comparison | None:
        """The cell's comparison at ``confidence``; None for a cell not among the samples."""
        found = self._found.get(cell)
        return None if found is None else found[0].comparison(found[1], confidence, rank_test)


class _Group:
    """The samples of one shape, stacked: ``candidate[m, n1]``, ``baseline[m, n2]``, and which rows
    have an interval of their own (2 values a side or more, all positive)."""

    def __init__(self, shape: Shape, samples: list[CellSample]):
        self.paired, n1, n2, self.exact = shape
        self.candidate = np.array([s.candidate for s in samples], dtype=float).reshape(len(samples), n1)
        self.baseline = np.array([s.baseline for s in samples], dtype=float).reshape(len(samples), n2)
        self.own = np.zeros(len(samples), dtype=bool)
        if min(n1, n2) >= 2:
            self.own = np.all(self.candidate > 0, axis=1) & np.all(self.baseline > 0, axis=1)
        self.lockstep_logs = [s.round_logs for s in samples]
        self._spreads: list[intervals.Spread] | None = None

    def round_logs(self) -> np.ndarray:
        """The per-round log ratios of the rows with an interval (a lockstep round's where given)."""
        own = np.flatnonzero(self.own)
        logs = np.log(self.candidate[own]) - np.log(self.baseline[own])
        for k, i in enumerate(own):
            if self.lockstep_logs[i] is not None:
                logs[k] = self.lockstep_logs[i]
        return logs

    def spreads(self) -> list[intervals.Spread]:
        """The noise of the rows with an interval: of their round log ratios (paired), else of each
        side's log values (``noise: pooled`` pools them)."""
        if self._spreads is None:
            if self.paired:
                self._spreads = [intervals.spread(self.round_logs())]
            else:
                self._spreads = [intervals.spread(np.log(side[self.own])) for side in (self.candidate,
                                                                                     self.baseline)]
        return self._spreads

    def compare(self, pooled: dict[bool, tuple[float, float]] | None, lockstep: bool) -> stats.Comparisons:
        """``stats.compare_rows`` of the group, each row's interval replaced as the sweep says."""
        replaced, method = None, None
        if self.exact:  # every row's counts agree (so every row has an interval of its own)
            replaced = intervals.count_range(np.log(self.candidate), np.log(self.baseline))
            return stats.compare_rows(self.candidate, self.baseline, paired=self.paired, interval=replaced,
                                      method=COUNT_METHOD)
        if pooled is not None:
            method = "pooled-noise " + ("trimmed t of per-round log ratios" if self.paired
                                        else "two-sample trimmed t of log values")
            if self.own.any():
                replaced = self._with_pooled_noise(*pooled[self.paired])
        elif self.paired and lockstep and self.own.any():
            method, replaced = LOCKSTEP_METHOD, intervals.paired(self.round_logs())
        if replaced is not None:
            replaced = _at_rows(replaced, self.own)
        return stats.compare_rows(self.candidate, self.baseline, paired=self.paired, interval=replaced,
                                  method=method, ratio_of_interval=self.paired and lockstep)

    def _with_pooled_noise(self, variance: float, df: float) -> intervals.LogInterval:
        if self.paired:
            cell = intervals.with_pooled_noise(self.spreads()[0], variance, df)
            return intervals.LogInterval(cell.center, np.sqrt(cell.term), cell.df)
        return intervals.difference(*(intervals.with_pooled_noise(s, variance, df) for s in self.spreads()))


def _counts_agree(sample: CellSample) -> bool:
    """Whether the sample's counts agree (``intervals.counts_agree``); a count of 0 or less never does."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return bool(intervals.counts_agree(np.log(sample.candidate), np.log(sample.baseline)))


def _at_rows(interval: intervals.LogInterval, own: np.ndarray) -> intervals.LogInterval:
    """``interval`` of the rows ``own`` marks, spread over all rows (NaN elsewhere)."""
    parts = []
    for values in (interval.center, interval.se, interval.df, np.broadcast_to(interval.floor, own.sum())):
        full = np.full(own.size, np.nan)
        full[own] = values
        parts.append(full)
    return intervals.LogInterval(*parts)


def _pooled_noise(samples: dict[Cell, CellSample], groups: dict[Shape, list[Cell]],
                  stacked: dict[Shape, _Group]) -> dict[bool, tuple[float, float]]:
    """Per kind (paired: log-ratio cells; unpaired: each side's log values), the pooled variance and
    its df over the cells with an interval (``intervals.pooled_variance``), in the order of
    ``samples``."""
    spreads: dict[Cell, list[intervals.Spread]] = {}
    for shape, cells in groups.items():
        group = stacked[shape]
        rows = [cell for cell, own in zip(cells, group.own, strict=True) if own]
        for k, cell in enumerate(rows):
            spreads[cell] = [intervals.Spread(s.center[k], s.term[k], s.df[k], s.n[k])
                             for s in group.spreads()]
    pooled = {}
    for kind in (True, False):
        cells = [spread for cell, sample in samples.items() if sample.paired == kind
                 for spread in spreads.get(cell, ())]
        pooled[kind] = intervals.pooled_variance(cells) if cells else (np.nan, np.nan)
    return pooled
