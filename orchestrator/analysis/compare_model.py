"""The model of ``shasweep compare A B``: two sweeps side by side, case by case.

Sweep ``A`` is the earlier batch (e.g. the baseline batch of an earlier release), ``B`` the new one.
Cases and sides are matched by name; only those both sweeps have are compared, and only ok runs
that passed their audit count, as in the report. Per case:

* every side's metrics in both sweeps with the change of the median, a 95% interval of that change
  (the two sweeps' runs as independent samples: the unpaired interval of ``analysis.intervals``,
  whose coverage the tests measure at every n >= 2) and a verdict: ``faster`` / ``slower`` when the
  interval excludes no change, ``no clear change`` when it straddles it, ``no interval`` with fewer
  than ``MIN_RUNS`` ok runs in either sweep; a clear change of at least ``highlight_pct`` is marked
  large;
* every side's ratio to the baseline in A and in B with both intervals (``0.644 -> 0.809``).

Besides: the settings the two sweeps ran differently (``analysis.sweep_diff``) and the package
versions that differ (``analysis.software``). Rendering is ``render.compare``'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from orchestrator.analysis import stats
from orchestrator.analysis.instructions import fingerprint_problem
from orchestrator.analysis.legacy_audit import apply_audit
from orchestrator.analysis.report_model import MetricRow, Report, load_runs, make_report
from orchestrator.analysis.software import VersionChange, reported_versions, version_changes
from orchestrator.analysis.stats import change_interval
from orchestrator.analysis.sweep_diff import settings_differences
from orchestrator.capabilities import higher_is_better
from orchestrator.errors import InvalidInputError

DEFAULT_HIGHLIGHT_PCT = 5.0
FASTER, SLOWER, UNCLEAR, NO_INTERVAL = "faster", "slower", "no clear change", "no interval"
LARGE = " (large)"  # appended to the verdict of a large clear change


@dataclass(frozen=True)
class MetricChange:
    """One metric of one (case, side) in both sweeps."""

    case: str
    side: str
    metric: str
    before: stats.Summary
    after: stats.Summary
    interval: stats.Comparison  # B against A: ratio of medians and its interval
    highlight_pct: float = DEFAULT_HIGHLIGHT_PCT

    @property
    def change_pct(self) -> float:
        """``(after median / before median - 1) * 100``; NaN when undefined."""
        return (stats.ratio(self.after.median, self.before.median) - 1.0) * 100.0

    @property
    def verdict(self) -> str:
        """faster | slower | no clear change | no interval, with `` (large)`` for a large clear change."""
        c = self.interval
        if not c.has_interval:
            return NO_INTERVAL
        if c.low <= 1.0 <= c.high:
            return UNCLEAR
        higher = c.low > 1.0
        better = higher if higher_is_better(self.metric) else not higher
        large = abs(self.change_pct) >= self.highlight_pct
        return (FASTER if better else SLOWER) + (LARGE if large else "")

    @property
    def large(self) -> bool:
        return self.verdict.endswith(LARGE)


@dataclass(frozen=True)
class RatioChange:
    """One side's ratio to the baseline on one metric in A and in B (each with its 95% interval)."""

    case: str
    side: str
    metric: str
    before: stats.Comparison | None
    after: stats.Comparison | None


@dataclass(frozen=True)
class SweepComparison:
    """Two sweeps' reports and what differs between them."""

    before: Report
    after: Report
    cases: list[str]
    sides: list[str]
    changes: list[MetricChange]
    ratios: list[RatioChange]
    warnings: list[str]  # settings the two sweeps ran differently
    software: list[VersionChange]
    highlight_pct: float = DEFAULT_HIGHLIGHT_PCT


def compare_reports(before: Report, after: Report, before_runs: pd.DataFrame, after_runs: pd.DataFrame,
                    highlight_pct: float = DEFAULT_HIGHLIGHT_PCT) -> SweepComparison:
    """Match the cases, sides and metrics both reports have (``*_runs``: their audited ok runs);
    ``InvalidInputError`` when none match."""
    cases = [c for c in after.cases if c in before.cases]
    sides = [s for s in after.sides if s in before.sides]
    if not cases or not sides:
        raise InvalidInputError(
            f"sweeps {before.sweep_id} and {after.sweep_id} share no case and side: "
            f"cases {before.cases} vs {after.cases}, sides {before.sides} vs {after.sides}")
    old, new = _by_key(before.rows), _by_key(after.rows)

    def interval(case: str, side: str, metric: str) -> stats.Comparison:
        return change_interval(_values(after_runs, case, side, metric),
                               _values(before_runs, case, side, metric))

    keys = [(c, s, m) for c in cases for s in sides for m in after.metrics if (c, s, m) in old]
    changes = [MetricChange(c, s, m, old[c, s, m].summary, new[c, s, m].summary, interval(c, s, m),
                            highlight_pct)
               for c, s, m in keys]
    warnings = settings_differences(before.record, after.record, sides)
    ratios: list[RatioChange] = []
    if before.baseline == after.baseline:
        ratios = [RatioChange(c, s, m, old[c, s, m].comparison, new[c, s, m].comparison)
                  for c, s, m in keys if s != after.baseline]
    else:
        warnings.append(f"baseline: {before.baseline} -> {after.baseline} (no ratios compared)")
    software = version_changes(reported_versions(before_runs), reported_versions(after_runs))
    return SweepComparison(before, after, cases, sides, changes, ratios, warnings, software, highlight_pct)


def load_comparison(results_root: Path, before_id: str, after_id: str,
                    highlight_pct: float = DEFAULT_HIGHLIGHT_PCT) -> SweepComparison:
    """Read both sweeps' reports and runs under ``results_root`` and compare them."""
    before, after = make_report(results_root, before_id), make_report(results_root, after_id)
    before_runs, after_runs = _ok_runs(results_root, before), _ok_runs(results_root, after)
    if (problem := fingerprint_problem(pd.concat([before_runs, after_runs], ignore_index=True))) is not None:
        raise InvalidInputError(f"compare {before_id} {after_id}: {problem}", "instrument")
    return compare_reports(before, after, before_runs, after_runs, highlight_pct)


def _ok_runs(results_root: Path, report: Report) -> pd.DataFrame:
    runs = apply_audit(load_runs(results_root, report.sweep_id, report.metrics), report.record)
    return runs[runs["status"] == "ok"]


def _values(runs: pd.DataFrame, case: str, side: str, metric: str) -> list[float]:
    mine = runs[(runs["case"] == case) & (runs["side"] == side)]
    return pd.to_numeric(mine[metric], errors="coerce").tolist() if metric in mine else []


def _by_key(rows: list[MetricRow]) -> dict[tuple[str, str, str], MetricRow]:
    return {(r.case, r.side, r.metric): r for r in rows}
