"""A benchmark suite's cases in the analysis (docs/design.md, "Suites"): which cases a sweep has (what
its suite runs found), which of them one side has and the baseline lacks or the other way round
(``added`` and ``removed``: listed, never gated), what in its input was wrong (exit 2), and the
summary row of its cases: the geometric mean of the common cases' candidate/baseline ratios, with
an interval.

The geometric mean ratio of ``K`` cases is ``exp(mean_k log ratio_k)``. Per round ``r`` each side's
mean log value over the cases, ``A_r = mean_k log cand[k, r]`` and ``B_r = mean_k log base[k, r]``,
is one number, and rounds are independent of each other (whatever the cases of one round share), so
the interval is the ordinary one of those per-round means (``intervals``): paired by round, the
one-sample t of ``A_r - B_r``; unpaired, the two-sample t of ``A`` against ``B``. Only complete
rounds count (every case has its value on both sides; ``summarize_suite`` picks them). Coverage is
measured by seeded simulation in ``tests/orchestrator/test_suites_stats.py``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from orchestrator.analysis import intervals
from orchestrator.analysis.verdicts import PAIRED_ORDERS, Comparer
from orchestrator.capabilities import SUITE_CASE, case_matches
from orchestrator.spec.protocol_checks import is_suite
from orchestrator.spec.schema import SweepSpec


def sweep_cases(spec: SweepSpec, runs: pd.DataFrame) -> list[str]:
    """The sweep's cases: its ``cases``, or for a suite the cases its runs read from the output that
    ``cases`` selects (sorted by name)."""
    if not is_suite(spec):
        return list(spec.cases)
    found = set(runs["case"].dropna()) - {SUITE_CASE} if "case" in runs else set()
    return sorted(c for c in found if any(case_matches(c, pattern) for pattern in spec.cases))


@dataclass(frozen=True)
class OneSided:
    """The cases of a suite sweep on one side of a comparison only: ``added``, found on ``side`` and
    never on the baseline; ``removed``, found on the baseline and never on ``side``. A case is found
    on a side when a run of that side's suite left a row for it, ok or not (the tool named it), so
    a benchmark that failed is not "removed"; a side none of whose suite runs was read has found
    nothing and makes no case one-sided."""

    side: str
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()

    def presence(self, case: str) -> str | None:
        """``added``, ``removed`` or None (the case is on both sides, or neither)."""
        return "added" if case in self.added else "removed" if case in self.removed else None

    def __bool__(self) -> bool:
        return bool(self.added or self.removed)


def one_sided_cases(spec: SweepSpec, runs: pd.DataFrame, cases: list[str]) -> dict[str, OneSided]:
    """Per non-baseline side of a suite sweep, its ``cases`` it has alone or lacks (``OneSided``); the
    same rows decide it for a separate process per side and round and for a lockstep round, whose
    cases have rows on the sides that ran them and none on the others."""
    if not is_suite(spec) or "case" not in runs or runs.empty:
        return {}
    found = {side: set(mine["case"].dropna()) & set(cases) for side, mine in runs.groupby("side")}
    baseline = found.get(spec.baseline, set())
    sides = {}
    for side in spec.sides:
        mine = found.get(side, set())
        if side == spec.baseline or not (mine and baseline):
            continue
        sides[side] = OneSided(side, tuple(sorted(mine - baseline)), tuple(sorted(baseline - mine)))
    return sides


def run_count(runs: pd.DataFrame) -> int:
    """How many bench runs the rows are: a suite run's cases count once."""
    if "suite_run_key" not in runs:
        return len(runs)
    return int(runs["suite_run_key"].fillna(runs["run_key"]).nunique())


def input_problem(spec: SweepSpec, runs: pd.DataFrame) -> tuple[str | None, str] | None:
    """(YAML key, why) for what the suite's runs showed to be wrong with the sweep's input: a run
    failed because of it (a ``cases`` entry that selects nothing, a unit that is not a time), or a
    gate's ``case`` that matches none of the cases found; None when nothing is."""
    if not is_suite(spec) or runs.empty:
        return None
    bad = runs["bad_input"].dropna() if "bad_input" in runs else pd.Series(dtype=object)
    if len(bad):
        return None, str(bad.iloc[0])
    cases = sweep_cases(spec, runs)
    for i, gate in enumerate(spec.gates):
        if cases and gate.case is not None and not any(case_matches(c, gate.case) for c in cases):
            return f"gates[{i}].case", (f"{gate.case!r} matches none of the suite's cases: "
                                        + ", ".join(cases[:10]) + (" ..." if len(cases) > 10 else ""))
    return None


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
    common: int  # the cases on both sides, which the geometric mean covers (the others: ``one_sided``)
    geomean: float  # exp(mean log ratio) over the complete rounds; NaN without 2 of them
    low: float
    high: float
    confidence: float
    rounds: int  # complete rounds: every common case has an ok run on both sides
    paired: bool
    one_sided: OneSided | None = None  # the side's added and removed cases (not in the geometric mean)


def summarize_suite(comparer: Comparer, cases: list[str], side: str, metric: str,
                    ratios: dict[str, float], confidence: float = 0.95,
                    one_sided: OneSided | None = None) -> SuiteSummary:
    """The summary of ``cases`` (ratio of medians per case: ``ratios``) for ``side`` against the
    comparer's baseline; the geometric mean covers the cases both have (not ``one_sided``'s)."""
    common = [case for case in cases if one_sided is None or one_sided.presence(case) is None]
    runs = _cell_runs(comparer, [(case, s) for s in (side, comparer.baseline) for case in common], metric)
    unique = not runs.duplicated(["cell", "repeat"]).any()
    paired = comparer.order in PAIRED_ORDERS and unique
    complete = []
    if unique and common:
        cells = runs["repeat"].value_counts()
        complete = sorted(cells.index[cells == 2 * len(common)])  # a round every cell of both sides ran
    ordered = sorted(cases, key=lambda c: -abs(math.log(ratios[c])) if _positive(ratios[c]) else math.inf)
    summary = SuiteSummary(side=side, metric=metric, cases=ordered, common=len(common), geomean=math.nan,
                           low=math.nan, high=math.nan, confidence=confidence, rounds=len(complete),
                           paired=paired, one_sided=one_sided)
    if len(complete) < 2:
        return summary
    table = runs[runs["repeat"].isin(complete)].pivot(index="cell", columns="repeat", values="value")
    values = table.to_numpy(dtype=float)  # [cell, round]: the side's cases, then the baseline's
    cand, base = values[:len(common)], values[len(common):]
    if not (np.all(cand > 0) and np.all(base > 0)):
        return summary
    interval = geomean_interval(np.log(cand), np.log(base), paired=paired)
    low, high = interval.bounds(confidence)
    return replace(summary, geomean=float(np.exp(interval.center)), low=float(low), high=float(high))


def _cell_runs(comparer: Comparer, cells: list[tuple[str, str]], metric: str) -> pd.DataFrame:
    """The runs of ``cells`` with a value of ``metric``: ``cell`` (its index in ``cells``), ``repeat``
    and ``value``, in one frame (a series per cell cost a 10,000-benchmark suite seconds)."""
    found = [comparer.values(case, side, metric) for case, side in cells]
    sizes = [repeats.size for repeats, _ in found]
    return pd.DataFrame({"cell": np.repeat(np.arange(len(cells)), sizes),
                         "repeat": np.concatenate([r for r, _ in found]) if found else np.zeros(0, dtype=int),
                         "value": np.concatenate([v for _, v in found]) if found else np.array([])})


def _positive(value: float) -> bool:
    return math.isfinite(value) and value > 0
