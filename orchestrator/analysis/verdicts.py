"""Gate verdicts from confidence intervals: PASS, FAIL, INCONCLUSIVE or NO DATA.

For each gate and each matching (case, non-baseline side), the candidate/baseline ratio of the gate's
metric gets an interval at the gate's ``confidence`` (``stats.compare``: a trimmed t on the log scale,
see ``intervals``) and a rank-test p-value. The verdict follows the interval alone:

* PASS: the interval lies entirely on the good side of every bound (``low >= min_ratio``,
  ``high <= max_ratio``; ``within: w`` is the bounds ``1 - w`` and ``1 + w``);
* FAIL: it lies entirely on the bad side of some bound (``high < min_ratio`` or ``low > max_ratio``),
  or the ratio is undefined (a baseline median of 0);
* INCONCLUSIVE: it straddles a bound, or no interval exists (fewer than 2 ok runs on a side);
* NO DATA: a side it needs has no ok run with the metric: nothing was measured to judge, so it is
  never a FAIL; it gives the exit code of runs not ok (3).

A ``within`` gate (equivalence) reads its PASS and its FAIL from two intervals of one centre, the
PASS's narrower (``claim_alphas``); a bound gate reads both from one. An adaptive sweep looks after
every round from ``repeats`` to ``max_repeats`` (``sequential``): the verdict is the first look that
decides, each look's intervals at the confidence the sweep's boundary gives them. Every verdict
also says what the sweep could see: the change from the bound it would detect with 80 % power
(``mde``) and, when INCONCLUSIVE, about how many rounds would decide it.

Runs are paired by round when the order gives every round every side once (``interleaved``,
``randomized`` blocks, ``lockstep``) and each side has at most one ok run per round: the rounds both
sides ran (at least 2) are compared pair by pair, so a disturbance that hit a whole round cancels in
the ratio. A lockstep round's log ratio is the median of its block pairs' (``analysis.block_pairs``).
"""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np
import pandas as pd

from orchestrator.analysis import block_pairs, stats
from orchestrator.analysis.compared_cells import CellSample, ComparedCells
from orchestrator.analysis.distributions import t_quantile
from orchestrator.analysis.sequential import POWER, Looks, rounds_to_decide
from orchestrator.capabilities import INSTRUCTIONS_METRIC, case_matches
from orchestrator.errors import EXIT_GATE_FAILED, EXIT_GATE_INCONCLUSIVE, EXIT_OK, EXIT_RUN_FAILED
from orchestrator.spec.schema import EQUIVALENCE_PASS_SHARE, GateSpec


class Verdict(StrEnum):
    """What a gate says of one (case, side); the verdict line counts each member, in this order."""

    PASS = "PASS"
    FAIL = "FAIL"
    INCONCLUSIVE = "INCONCLUSIVE"
    NO_DATA = "NO DATA"


PAIRED_ORDERS: tuple[str, ...] = ("interleaved", "randomized", "lockstep")
_NO_VALUES: tuple[np.ndarray, np.ndarray] = (np.array([], dtype=np.int64), np.array([], dtype=float))
MAX_LOG_CHANGE = 700.0  # exp() of more overflows a float: such a change is reported as infinite


@dataclass(frozen=True)
class GateVerdict:
    """One gate evaluated for one (case, side).

    ``comparison`` is the deciding look's (or the last look's); ``mde``: the relative distance from
    the bound a true ratio needs to be decided with 80 % power at this n; ``rounds_needed``: for an
    INCONCLUSIVE verdict, the estimated total rounds that would decide it (None when not estimable).
    """

    gate: int
    metric: str
    case: str
    side: str
    bound: str  # e.g. ">= 0.9x"
    comparison: stats.Comparison
    verdict: Verdict
    reason: str
    mde: float | None = None
    rounds_needed: int | None = None
    looks: int = 1
    waived: str | None = None  # a FAIL accepted by a waiver: its reason (``analysis.waivers``)
    empty_sides: tuple[str, ...] = ()  # NO DATA: the sides without an ok run that has the metric
    equivalence: bool = False  # a within gate: its PASS read a narrower interval than its FAIL

    @property
    def ratio(self) -> float:
        return self.comparison.ratio


def gates_exit_code(verdicts: list[GateVerdict]) -> int:
    """The exit code the gates alone give: 3 when one has NO DATA (as runs not ok), else 1 when a FAIL
    is not waived, else 4 when one is INCONCLUSIVE, else 0 (a waived FAIL counts as neither)."""
    if any(v.verdict == Verdict.NO_DATA for v in verdicts):
        return EXIT_RUN_FAILED
    if any(v.verdict == Verdict.FAIL and v.waived is None for v in verdicts):
        return EXIT_GATE_FAILED
    return EXIT_GATE_INCONCLUSIVE if any(v.verdict == Verdict.INCONCLUSIVE for v in verdicts) else EXIT_OK


@dataclass
class Comparer:
    """Compares sides of one sweep's ok runs against the baseline, pairing by round where it can.

    ``runs`` needs the columns ``case``, ``side``, ``repeat`` and the metrics asked for. ``noise``:
    ``cell`` (each comparison's own noise) or ``pooled`` (the sweep's pooled noise of the metric,
    see ``intervals``). ``rounds`` restricts a comparison to the runs of rounds ``< rounds`` (a look).
    """

    runs: pd.DataFrame
    baseline: str
    order: str
    noise: str = "cell"
    _compared: dict[tuple[str, int | None], ComparedCells] = field(default_factory=dict, repr=False)
    _cells_in_order: list[tuple[str, str]] | None = field(default=None, repr=False)
    _values: dict[tuple, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict, repr=False)
    _rows_by_cell: dict[tuple[str, str], np.ndarray] | None = field(default=None, repr=False)
    _blocks: dict[tuple[str, str], dict[int, list[dict]]] = field(default_factory=dict, repr=False)
    _round_logs: dict[tuple, np.ndarray] = field(default_factory=dict, repr=False)
    _rounds: dict[str, int] | None = field(default=None, repr=False)
    _metrics: set[str] = field(default_factory=set, repr=False)  # those ``_values`` holds every cell of

    def values(self, case: str, side: str, metric: str, rounds: int | None = None
               ) -> tuple[np.ndarray, np.ndarray]:
        """(repeats, values) of the metric of the ok runs of (case, side), in the runs' order; missing
        values dropped."""
        if metric not in self._metrics:
            self._values |= self._metric_arrays(metric)
            self._metrics.add(metric)
        repeats, values = self._values.get((case, side, metric), _NO_VALUES)
        if rounds is None:
            return repeats, values
        kept = repeats < rounds
        return repeats[kept], values[kept]

    def _metric_arrays(self, metric: str) -> dict[tuple, tuple[np.ndarray, np.ndarray]]:
        """(repeats, finite values) of ``metric`` for every (case, side) at once: one pass over the runs
        (a pass per cell made a 10,000-benchmark suite's gates quadratic in its cases)."""
        if metric not in self.runs or not len(self.runs):
            return {}
        values = pd.to_numeric(self.runs[metric], errors="coerce").to_numpy(dtype=float)
        repeats, finite = self.runs["repeat"].to_numpy(), np.isfinite(values)
        return {(case, side, metric): (repeats[kept], values[kept])
                for (case, side), rows in self._rows().items() for kept in [rows[finite[rows]]]}

    def _rows(self) -> dict[tuple[str, str], np.ndarray]:
        """The positions of each (case, side)'s runs, grouped once."""
        if self._rows_by_cell is None:
            grouped = self.runs.groupby(["case", "side"], sort=False)
            self._rows_by_cell = grouped.indices if len(self.runs) else {}
        return self._rows_by_cell

    def rounds_of(self, case: str) -> int:
        """Rounds of ``case`` that hold any run (the highest repeat + 1; 0 without runs)."""
        if self._rounds is None:
            highest = self.runs.groupby("case", sort=False)["repeat"].max() if len(self.runs) else {}
            self._rounds = {str(c): int(r) + 1 for c, r in dict(highest).items() if pd.notna(r)}
        return self._rounds.get(case, 0)

    def pair(self, case: str, side: str, metric: str, rounds: int | None = None
             ) -> tuple[np.ndarray, np.ndarray, bool]:
        """(candidate, baseline, paired): the rounds both ran, in round order, when they pair."""
        cand_rounds, cand = self.values(case, side, metric, rounds)
        base_rounds, base = self.values(case, self.baseline, metric, rounds)
        if self.order not in PAIRED_ORDERS or min(cand.size, base.size) < 2:
            return cand, base, False
        if np.array_equal(cand_rounds, base_rounds) and np.all(np.diff(cand_rounds) > 0):
            return cand, base, True  # every round once a side, in order (most cells): nothing to match
        unique = len(set(cand_rounds)) == len(cand_rounds) and len(set(base_rounds)) == len(base_rounds)
        if unique:
            common, in_cand, in_base = np.intersect1d(cand_rounds, base_rounds, assume_unique=True,
                                                      return_indices=True)
            if len(common) >= 2:
                return cand[in_cand], base[in_base], True
        return cand, base, False

    def round_log_ratios(self, case: str, side: str, metric: str, rounds: int | None = None) -> np.ndarray:
        """The per-round log ratios of a paired cell, in round order: log(side / baseline) of the two
        runs, or in a lockstep round whose runs kept their blocks, the median of its block pairs'
        (``analysis.block_pairs``)."""
        key = (case, side, metric, rounds)
        if key not in self._round_logs:
            self._round_logs[key] = self._round_log_ratios(case, side, metric, rounds)
        return self._round_logs[key]

    def round_sd(self, case: str, side: str, metric: str) -> float | None:
        """How steady ``metric`` is from round to round in a paired cell: the s.d. of its per-round log
        ratios over every round both sides ran (the noise its interval reads); None where the runs do
        not pair or fewer than 2 rounds have a ratio."""
        if not self.pair(case, side, metric)[2]:
            return None
        logs = self.round_log_ratios(case, side, metric)
        logs = logs[np.isfinite(logs)]
        return float(np.std(logs, ddof=1)) if len(logs) >= 2 else None

    def _round_log_ratios(self, case: str, side: str, metric: str, rounds: int | None) -> np.ndarray:
        cand_rounds, cand = self.values(case, side, metric, rounds)
        base_rounds, base = self.values(case, self.baseline, metric, rounds)
        common, in_cand, in_base = np.intersect1d(cand_rounds, base_rounds, return_indices=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            logs = np.log(cand[in_cand]) - np.log(base[in_base])
        if self.order == "lockstep":
            cand_blocks, base_blocks = self._blocks_of(case, side), self._blocks_of(case, self.baseline)
            for i, repeat in enumerate(common):
                estimate = block_pairs.round_log_ratio(base_blocks.get(int(repeat), []),
                                                    cand_blocks.get(int(repeat), []), metric)
                logs[i] = logs[i] if estimate is None else estimate
        return logs

    def _blocks_of(self, case: str, side: str) -> dict[int, list[dict]]:
        """Repeat -> the blocks of (case, side)'s run of that round ({} without a ``blocks`` column)."""
        if (case, side) not in self._blocks:
            rows = self._rows().get((case, side), [])
            repeats = self.runs["repeat"].to_numpy()[rows]
            blocks = self.runs["blocks"].to_numpy()[rows] if "blocks" in self.runs else []
            self._blocks[(case, side)] = {int(r): block_pairs.parse_blocks(b)
                                          for r, b in zip(repeats, blocks, strict=False)}
        return self._blocks[(case, side)]

    def compare(self, case: str, side: str, metric: str, confidence: float = stats.DEFAULT_CONFIDENCE,
                rounds: int | None = None, rank_test: bool = True) -> stats.Comparison:
        """``side`` against the baseline in ``case`` on ``metric`` (runs of rounds ``< rounds``);
        ``rank_test=False`` leaves the p-value NaN (a look that only needs the interval). Every cell
        of the metric and look is compared at once, on the first ask (``analysis.compared_cells``)."""
        key = (metric, rounds)
        if key not in self._compared:
            samples = {cell: self._sample(*cell, metric, rounds) for cell in self._compared_cells()}
            self._compared[key] = ComparedCells(samples, self.noise, lockstep=self.order == "lockstep",
                                                counts=metric == INSTRUCTIONS_METRIC)
        found = self._compared[key].comparison((case, side), confidence, rank_test)
        if found is not None:
            return found
        cand, base, paired = self.pair(case, side, metric, rounds)  # no runs of the cell: no interval
        return stats.compare(cand, base, paired=paired, confidence=confidence, rank_test=rank_test)

    def _sample(self, case: str, side: str, metric: str, rounds: int | None) -> CellSample:
        cand, base, paired = self.pair(case, side, metric, rounds)
        logs = None
        if paired and self.order == "lockstep" and stats.has_log_interval(cand, base):
            logs = self.round_log_ratios(case, side, metric, rounds)
        return CellSample(cand, base, paired, logs)

    def _compared_cells(self) -> list[tuple[str, str]]:
        """Every (case, non-baseline side) that has runs: cases in the order of their first row, a
        case's sides likewise (the order ``noise: pooled`` sums them in)."""
        if self._cells_in_order is None:
            first = self.runs[["case", "side"]].dropna().drop_duplicates()
            rank = {case: i for i, case in enumerate(self.runs["case"].unique())}
            cells = [(c, s) for c, s in zip(first["case"], first["side"], strict=True) if s != self.baseline]
            self._cells_in_order = sorted(cells, key=lambda cell: rank[cell[0]])
        return self._cells_in_order


def evaluate_gates(gates: list[GateSpec], cases: list[str], sides: list[str], comparer: Comparer,
                   looks: Looks | None = None, not_gated: Collection[tuple[str, str]] = (), *,
                   power: bool = True) -> list[GateVerdict]:
    """Every gate against every matching (case, non-baseline side) but the ``not_gated`` ones (a
    suite's added and removed cases: nothing to compare); ``looks``: of an adaptive sweep. A gate's
    ``case`` is a name or a glob (a suite's cases). ``power``: see ``gate_verdict``."""
    verdicts = []
    for index, gate in enumerate(gates):
        for case in [c for c in cases if case_matches(c, gate.case)] if gate.case else cases:
            for side in [gate.side] if gate.side else [s for s in sides if s != comparer.baseline]:
                if (case, side) not in not_gated:
                    verdicts.append(gate_verdict(index, gate, case, side, comparer, looks, power=power))
    return verdicts


def gate_verdict(index: int, gate: GateSpec, case: str, side: str, comparer: Comparer,
                 looks: Looks | None = None, *, power: bool = True) -> GateVerdict:
    """One gate for one (case, side): the first look that decides (PASS or FAIL), else the last
    look's; see the module docstring. ``power=False`` leaves out what only a report shows beside the
    verdict (the rank test's p-value, the minimum detectable change, the rounds needed): the verdict,
    its ratio and its interval are the same."""
    looks = looks or Looks(1, 1)
    schedule = looks.schedule(comparer.rounds_of(case))
    for rounds in schedule:
        limit = rounds if looks.adaptive else None
        passing, failing = (comparer.compare(case, side, gate.metric, confidence, limit, rank_test=False)
                            for confidence in claim_confidences(gate, looks, rounds))
        empty = tuple(s for s in (side, comparer.baseline)
                      if not comparer.values(case, s, gate.metric, limit)[1].size)
        verdict, reason = _decide(gate, empty, passing, failing)
        if verdict in (Verdict.PASS, Verdict.FAIL):
            break
    shown = passing if verdict == Verdict.PASS else failing
    comparison = comparer.compare(case, side, gate.metric, shown.confidence, limit, rank_test=power)
    look = schedule.index(rounds) + 1
    if looks.adaptive:
        closed = "; the sweep's time budget closed its looks there" if rounds == looks.closing else ""
        reason += f" (look {look} of {looks.last - looks.first + 1}, after {rounds} rounds{closed})"
    mde, needed = detectable(comparison, gate, looks) if power else (None, None)
    return GateVerdict(index, gate.metric, case, side, gate.describe(), comparison, verdict, reason, mde,
                       needed if verdict == Verdict.INCONCLUSIVE else None, look,
                       empty_sides=empty if verdict == Verdict.NO_DATA else (),
                       equivalence=gate.within is not None)


def claim_alphas(gate: GateSpec) -> tuple[float, float]:
    """The two-sided error rates of the intervals a gate's PASS and its FAIL read (at a fixed
    sweep's one look; an adaptive sweep's looks share them, ``sequential``).

    A bound gate reads one interval at ``alpha = 1 - confidence`` for both claims: with the true
    ratio on a bound, a wrong PASS needs the interval to miss it on one side, a wrong FAIL on the
    other, ``alpha / 2`` each. A ``within`` gate's PASS claims equivalence and must clear both
    bounds, which an interval at ``alpha`` does less often than it clears one: its PASS reads an
    interval at ``2 * EQUIVALENCE_PASS_SHARE * alpha`` (two one-sided tests, each at that share of
    alpha) and its FAIL one at ``2 * (1 - share) * alpha``, so that with the truth on a bound the
    wrong PASS and the wrong FAIL still add up to at most ``alpha``."""
    alpha = 1 - gate.confidence
    if gate.within is None:
        return alpha, alpha
    return 2 * EQUIVALENCE_PASS_SHARE * alpha, 2 * (1 - EQUIVALENCE_PASS_SHARE) * alpha


def claim_confidences(gate: GateSpec, looks: Looks, rounds: int) -> tuple[float, float]:
    """The confidence of the interval the PASS and the FAIL of ``gate`` read at the look after
    ``rounds`` rounds."""
    if gate.within is None:
        confidence = looks.confidence_at(rounds, gate.confidence)
        return confidence, confidence
    passing, failing = claim_alphas(gate)
    return 1 - looks.level_at(rounds, passing), 1 - looks.level_at(rounds, failing)


def _decide(gate: GateSpec, empty: tuple[str, ...], passing: stats.Comparison, failing: stats.Comparison
            ) -> tuple[Verdict, str]:
    """The verdict of one look from the intervals its PASS and its FAIL read; ``empty``: the sides
    without an ok run that has the metric."""
    if empty:
        return Verdict.NO_DATA, (f"no ok runs with {gate.metric} on side "
                                 + " and ".join(repr(s) for s in empty))
    if math.isnan(failing.ratio):
        return Verdict.FAIL, f"ratio undefined: baseline median of {gate.metric} is 0"
    if not failing.has_interval:
        return Verdict.INCONCLUSIVE, _why_no_interval(failing)
    return judge(passing, failing, gate)


def detectable(comparison: stats.Comparison, gate: GateSpec, looks: Looks | None = None
               ) -> tuple[float | None, int | None]:
    """(minimum detectable change, rounds needed) from the comparison's noise and n.

    The MDE is ``exp((t_conf + t_power) * se) - 1``: how far from the bound the true ratio must lie
    for an interval at the comparison's confidence to exclude the bound with 80 % power. Rounds
    needed: the first look of ``looks`` (the sweep's boundary; default a fixed sweep) whose interval
    would clear the estimate's distance from the nearest bound with 80 % power at the observed
    noise (``sequential.rounds_to_decide``), at the error rate of the claim the estimate points to
    (PASS inside the bounds, FAIL outside). None where no interval exists.
    """
    if not comparison.has_interval or not comparison.se > 0:
        return None, None
    mde = minimum_detectable(comparison.se, comparison.df, comparison.confidence)
    distance = min(abs(comparison.center - math.log(value)) for _, value in gate.bounds)
    n = min(comparison.n_candidate, comparison.n_baseline)
    estimate = math.exp(comparison.center)
    inside = all(holds(op, value, estimate, estimate) for op, value in gate.bounds)
    alpha = claim_alphas(gate)[0 if inside else 1]
    needed = rounds_to_decide(comparison.se * math.sqrt(n), distance, (looks or Looks(1, 1)).planned(), alpha,
                              comparison.paired, start=n)
    return mde, needed


def minimum_detectable(se: float, df: float, confidence: float) -> float:
    """``exp((t(1 - alpha/2) + t(0.8)) * se) - 1`` with ``df`` degrees of freedom: the relative change
    from a bound an interval at ``confidence`` excludes with 80 % power; infinite where that overflows
    (e.g. df 1 at a late look)."""
    alpha = 1 - confidence
    log_mde = (t_quantile(1 - alpha / 2, df) + t_quantile(POWER, df)) * se
    return math.expm1(log_mde) if log_mde < MAX_LOG_CHANGE else math.inf


def judge(passing: stats.Comparison, failing: stats.Comparison, gate: GateSpec) -> tuple[Verdict, str]:
    """PASS when ``passing``'s interval keeps every bound, FAIL when ``failing``'s lies entirely on the
    bad side of one, INCONCLUSIVE otherwise, and why (a bound gate's two are one interval)."""
    violated = [f"{'<' if op == '>=' else '>'} {value:g}" for op, value in gate.bounds
                if broken(op, value, failing.low, failing.high)]
    if violated:
        return Verdict.FAIL, f"{format_interval(failing)} entirely {' and '.join(violated)}"
    if all(holds(op, value, passing.low, passing.high) for op, value in gate.bounds):
        kept = " and ".join(f"{op} {value:g}" for op, value in gate.bounds)
        return Verdict.PASS, f"{format_interval(passing)} entirely {kept}"
    straddled = [f"{value:g}" for op, value in gate.bounds if not holds(op, value, failing.low, failing.high)]
    return (Verdict.INCONCLUSIVE,
            f"{format_interval(failing)} straddles {' and '.join(straddled)}: more repeats needed to decide")


def holds(op: str, value: float, low: float, high: float) -> bool:
    """Whether the interval [low, high] lies entirely on the good side of the bound ``op value``."""
    return low >= value if op == ">=" else high <= value


def broken(op: str, value: float, low: float, high: float) -> bool:
    """Whether the interval [low, high] lies entirely on the bad side of the bound ``op value``."""
    return high < value if op == ">=" else low > value


def bounds(low: float, high: float) -> str:
    """An interval of ratios, ``[0.941, 1.062]``; a bound of 10,000 or more (a first look's interval
    at a confidence of many nines) with an exponent, ``[0.000, 3.05e+129]``, not 130 digits."""
    return "[" + ", ".join(f"{x:.3f}" if abs(x) < 1e4 else f"{x:.3g}" for x in (low, high)) + "]"


def format_interval(comparison: stats.Comparison) -> str:
    """``95% CI [0.941, 0.962]``, or ``no CI``."""
    if not comparison.has_interval:
        return "no CI"
    return f"{100 * comparison.confidence:.4g}% CI {bounds(comparison.low, comparison.high)}"


def format_p(comparison: stats.Comparison) -> str:
    return "-" if math.isnan(comparison.p_value) else f"{comparison.p_value:.3g}"


def format_n(comparison: stats.Comparison) -> str:
    """``5 vs 5 paired`` (candidate vs baseline runs, and whether rounds were paired)."""
    pairing = "paired" if comparison.paired else "unpaired"
    return f"{comparison.n_candidate} vs {comparison.n_baseline} {pairing}"


def format_detectable(verdict: GateVerdict) -> str:
    """``MDE 2.1%`` plus ``~14 rounds to decide`` for an INCONCLUSIVE verdict; ``-`` when unknown."""
    if verdict.mde is None:
        return "-"
    text = f"MDE {100 * verdict.mde:.1f}%"
    if verdict.verdict == Verdict.INCONCLUSIVE:
        needed = verdict.rounds_needed
        text += f", ~{needed} rounds to decide" if needed else ", estimate on the bound"
    return text


def _why_no_interval(comparison: stats.Comparison) -> str:
    if min(comparison.n_candidate, comparison.n_baseline) < 2:
        return (f"no interval: needs at least 2 ok runs per side, has {comparison.n_candidate} vs "
                f"{comparison.n_baseline}")
    return "no interval: a baseline run measured 0"
