"""Gate verdicts from confidence intervals: PASS, FAIL or INCONCLUSIVE.

For each gate and each matching (case, non-baseline side), the candidate/baseline ratio of medians
of the gate's metric gets a seeded percentile-bootstrap interval at the gate's ``confidence``
(``stats.compare``) and a Mann-Whitney U p-value. The verdict follows the interval alone:

* PASS: the interval lies entirely on the good side of every bound (``low >= min_ratio``,
  ``high <= max_ratio``);
* FAIL: it lies entirely on the bad side of some bound (``high < min_ratio`` or ``low > max_ratio``),
  or there is nothing to compare (no ok runs on a side, a baseline median of 0);
* INCONCLUSIVE: it straddles a bound, or no interval exists (fewer than 2 ok runs on a side).

Runs are paired by round when the order gives every round every side once (``interleaved``,
``randomized`` blocks) and both sides have ok runs of exactly the same repeats; then rounds are
resampled jointly, so a disturbance that hit a whole round cancels in the ratio.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from orchestrator.analysis import stats
from orchestrator.errors import EXIT_GATE_FAILED, EXIT_GATE_INCONCLUSIVE, EXIT_OK
from orchestrator.spec.schema import GateSpec

PASS, FAIL, INCONCLUSIVE = "PASS", "FAIL", "INCONCLUSIVE"
PAIRED_ORDERS: tuple[str, ...] = ("interleaved", "randomized")


@dataclass(frozen=True)
class GateVerdict:
    """One gate evaluated for one (case, side)."""

    gate: int
    metric: str
    case: str
    side: str
    bound: str  # e.g. ">= 0.9x"
    comparison: stats.Comparison
    verdict: str  # PASS | FAIL | INCONCLUSIVE
    reason: str
    waived: str | None = None  # a FAIL accepted by a waiver: its reason (``analysis.waivers``)

    @property
    def ratio(self) -> float:
        return self.comparison.ratio


def gates_exit_code(verdicts: list[GateVerdict]) -> int:
    """The exit code the gates alone give: 1 when a FAIL is not waived, else 4 when one is
    INCONCLUSIVE, else 0 (a waived FAIL counts as neither)."""
    if any(v.verdict == FAIL and v.waived is None for v in verdicts):
        return EXIT_GATE_FAILED
    return EXIT_GATE_INCONCLUSIVE if any(v.verdict == INCONCLUSIVE for v in verdicts) else EXIT_OK


@dataclass
class Comparer:
    """Compares sides of one sweep's ok runs against the baseline, pairing by round where it can.

    ``runs`` needs the columns ``case``, ``side``, ``repeat`` and the metrics asked for; results are
    cached per (case, side, metric, confidence).
    """

    runs: pd.DataFrame
    baseline: str
    order: str
    resamples: int = stats.DEFAULT_RESAMPLES
    seed: int = stats.DEFAULT_SEED
    _cache: dict[tuple[str, str, str, float], stats.Comparison] = field(default_factory=dict, repr=False)

    def values(self, case: str, side: str, metric: str) -> pd.Series:
        """The metric of the ok runs of (case, side), indexed by repeat; missing values dropped."""
        mine = self.runs[(self.runs["case"] == case) & (self.runs["side"] == side)]
        column = mine[metric] if metric in mine else pd.Series(np.nan, index=mine.index)
        values = pd.to_numeric(column, errors="coerce")
        return pd.Series(values.to_numpy(dtype=float), index=mine["repeat"].to_numpy()).dropna()

    def compare(self, case: str, side: str, metric: str,
                confidence: float = stats.DEFAULT_CONFIDENCE) -> stats.Comparison:
        """``side`` against the baseline in ``case`` on ``metric``."""
        key = (case, side, metric, confidence)
        if key not in self._cache:
            cand, base = self.values(case, side, metric), self.values(case, self.baseline, metric)
            paired = self.order in PAIRED_ORDERS and _same_rounds(cand, base)
            if paired:
                cand, base = cand.sort_index(), base.sort_index()
            self._cache[key] = stats.compare(cand.to_numpy(), base.to_numpy(), paired=paired,
                                             confidence=confidence, resamples=self.resamples, seed=self.seed)
        return self._cache[key]


def _same_rounds(cand: pd.Series, base: pd.Series) -> bool:
    """Each side has at most one value per round, and both have the same rounds (at least 2)."""
    return (cand.index.is_unique and base.index.is_unique and len(cand) >= 2
            and set(cand.index) == set(base.index))


def evaluate_gates(gates: list[GateSpec], cases: list[str], sides: list[str], comparer: Comparer
                   ) -> list[GateVerdict]:
    """Every gate against every matching (case, non-baseline side)."""
    verdicts = []
    for index, gate in enumerate(gates):
        for case in [gate.case] if gate.case else cases:
            for side in [gate.side] if gate.side else [s for s in sides if s != comparer.baseline]:
                verdicts.append(gate_verdict(index, gate, case, side, comparer))
    return verdicts


def gate_verdict(index: int, gate: GateSpec, case: str, side: str, comparer: Comparer) -> GateVerdict:
    """One gate for one (case, side); see the module docstring for the rules."""
    comparison = comparer.compare(case, side, gate.metric, gate.confidence)
    empty = [s for s in (side, comparer.baseline) if comparer.values(case, s, gate.metric).empty]
    bound = " and ".join(f"{op} {value:g}x" for op, value in _bounds(gate))
    if empty:
        verdict, reason = FAIL, f"no ok runs with {gate.metric} on side {empty[0]!r}"
    elif math.isnan(comparison.ratio):
        verdict, reason = FAIL, f"ratio undefined: baseline median of {gate.metric} is 0"
    elif not comparison.has_interval:
        verdict, reason = INCONCLUSIVE, _why_no_interval(comparison)
    else:
        verdict, reason = judge(comparison, gate)
    return GateVerdict(index, gate.metric, case, side, bound, comparison, verdict, reason)


def judge(comparison: stats.Comparison, gate: GateSpec) -> tuple[str, str]:
    """PASS, FAIL or INCONCLUSIVE from where the interval lies against the gate's bounds, and why."""
    violated, kept, straddled = [], [], []
    for op, value in _bounds(gate):
        if op == ">=":
            broken, held, bad_op = comparison.high < value, comparison.low >= value, "<"
        else:
            broken, held, bad_op = comparison.low > value, comparison.high <= value, ">"
        if broken:
            violated.append(f"{bad_op} {value:g}")
        elif held:
            kept.append(f"{op} {value:g}")
        else:
            straddled.append(f"{value:g}")
    interval = format_interval(comparison)
    if violated:
        return FAIL, f"{interval} entirely {' and '.join(violated)}"
    if straddled:
        return INCONCLUSIVE, f"{interval} straddles {' and '.join(straddled)}: more repeats needed to decide"
    return PASS, f"{interval} entirely {' and '.join(kept)}"


def format_interval(comparison: stats.Comparison) -> str:
    """``95% CI [0.941, 0.962]``, or ``no CI``."""
    if not comparison.has_interval:
        return "no CI"
    return f"{100 * comparison.confidence:g}% CI [{comparison.low:.3f}, {comparison.high:.3f}]"


def format_p(comparison: stats.Comparison) -> str:
    return "-" if math.isnan(comparison.p_value) else f"{comparison.p_value:.3g}"


def format_n(comparison: stats.Comparison) -> str:
    """``5 vs 5 paired`` (candidate vs baseline runs, and whether rounds were paired)."""
    pairing = "paired" if comparison.paired else "unpaired"
    return f"{comparison.n_candidate} vs {comparison.n_baseline} {pairing}"


def _bounds(gate: GateSpec) -> list[tuple[str, float]]:
    return ([(">=", gate.min_ratio)] if gate.min_ratio is not None else []) + (
        [("<=", gate.max_ratio)] if gate.max_ratio is not None else [])


def _why_no_interval(comparison: stats.Comparison) -> str:
    if min(comparison.n_candidate, comparison.n_baseline) < 2:
        return (f"no interval: needs at least 2 ok runs per side, has {comparison.n_candidate} vs "
                f"{comparison.n_baseline}")
    return "no interval: a baseline run measured 0"
