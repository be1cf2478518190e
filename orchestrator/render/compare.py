"""``shasweep compare A B``: two sweeps side by side, case by case.

Sweep ``A`` is the earlier batch (e.g. the baseline batch of an earlier release), ``B`` the new one.
Cases and sides are matched by name; only those both sweeps have are compared, and only ok runs
that passed their audit count, as in the report. Per case:

* every side's metrics in both sweeps with the change of the median, a 95% interval of that change
  (the two sweeps' runs as independent samples: the unpaired interval of ``analysis.intervals``,
  whose coverage the tests measure at every n >= 2) and a verdict: ``faster`` / ``slower`` when the
  interval excludes no change, ``no clear change`` when it straddles it, ``no interval`` with fewer
  than ``MIN_RUNS`` ok runs in either sweep; a clear change of at least ``highlight_pct`` is marked
  large (bold, coloured);
* every side's ratio to the baseline in A and in B with both intervals (``0.644 -> 0.809``).

Above the cases: the settings the two sweeps ran differently (``analysis.sweep_diff``), the package
versions that differ (``analysis.software``) and each side's SHA in both.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from orchestrator.analysis import stats
from orchestrator.analysis.legacy_audit import apply_audit
from orchestrator.analysis.report_model import MetricRow, Report, load_runs, make_report
from orchestrator.analysis.software import VersionChange, version_changes, versions_of
from orchestrator.analysis.stats import MIN_RUNS, change_interval
from orchestrator.analysis.sweep_diff import settings_differences
from orchestrator.analysis.verdicts import format_interval
from orchestrator.errors import InvalidInputError
from orchestrator.render.markdown import markdown_table, md_items, md_text
from orchestrator.render.tables import Table, format_change, format_change_interval, format_summary

if TYPE_CHECKING:  # Bokeh: only for a page
    from orchestrator.render.page import Page

DEFAULT_HIGHLIGHT_PCT = 5.0
FASTER, SLOWER, UNCLEAR, NO_INTERVAL = "faster", "slower", "no clear change", "no interval"
LARGE = " (large)"  # appended to the verdict of a large clear change


@dataclass(frozen=True)
class Change:
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
        better = higher if self.metric == "throughput" else not higher  # *_ms: lower is better
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
class Comparison:
    """Two sweeps' reports and what differs between them."""

    before: Report
    after: Report
    cases: list[str]
    sides: list[str]
    changes: list[Change]
    ratios: list[RatioChange]
    warnings: list[str]  # settings the two sweeps ran differently
    software: list[VersionChange]
    highlight_pct: float = DEFAULT_HIGHLIGHT_PCT


def compare_reports(before: Report, after: Report, before_runs: pd.DataFrame, after_runs: pd.DataFrame,
                    highlight_pct: float = DEFAULT_HIGHLIGHT_PCT) -> Comparison:
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
    changes = [Change(c, s, m, old[c, s, m].summary, new[c, s, m].summary, interval(c, s, m), highlight_pct)
               for c, s, m in keys]
    warnings = settings_differences(before.record, after.record, sides)
    ratios: list[RatioChange] = []
    if before.baseline == after.baseline:
        ratios = [RatioChange(c, s, m, old[c, s, m].comparison, new[c, s, m].comparison)
                  for c, s, m in keys if s != after.baseline]
    else:
        warnings.append(f"baseline: {before.baseline} -> {after.baseline} (no ratios compared)")
    software = version_changes(versions_of(before_runs), versions_of(after_runs))
    return Comparison(before, after, cases, sides, changes, ratios, warnings, software, highlight_pct)


def make_comparison(results_root: Path, before_id: str, after_id: str,
                    highlight_pct: float = DEFAULT_HIGHLIGHT_PCT) -> Comparison:
    before, after = make_report(results_root, before_id), make_report(results_root, after_id)
    return compare_reports(before, after, _ok_runs(results_root, before), _ok_runs(results_root, after),
                           highlight_pct)


def _ok_runs(results_root: Path, report: Report) -> pd.DataFrame:
    runs = apply_audit(load_runs(results_root, report.sweep_id, report.metrics), report.record)
    return runs[runs["status"] == "ok"]


def _values(runs: pd.DataFrame, case: str, side: str, metric: str) -> list[float]:
    mine = runs[(runs["case"] == case) & (runs["side"] == side)]
    return pd.to_numeric(mine[metric], errors="coerce").tolist() if metric in mine else []


def sides_table(comparison: Comparison) -> Table:
    """Each compared side's SHA in both sweeps."""
    def sha(report: Report, side: str) -> str:
        return report.record.side(side).sha or "-"

    before, after = comparison.before, comparison.after
    rows = [[side, sha(before, side), sha(after, side)] for side in comparison.sides]
    return Table(["side", f"sha in {before.sweep_id}", f"sha in {after.sweep_id}"], rows)


def software_table(comparison: Comparison) -> Table:
    """The package versions that differ: from the bench's header audit and the host record."""
    rows = [[c.package, c.source, ", ".join(c.before) or "absent", ", ".join(c.after) or "absent"]
            for c in comparison.software]
    return Table(["package", "reported by", comparison.before.sweep_id, comparison.after.sweep_id], rows)


def case_table(comparison: Comparison, case: str) -> Table:
    """Per side and metric: both summaries, the change of the median, its interval and verdict."""
    def ok_runs(report: Report, side: str) -> int:
        return report.counts.get((case, side), (0, 0))[0]

    rows = [[c.side, c.metric, format_summary(c.before, ok_runs(comparison.before, c.side)),
             format_summary(c.after, ok_runs(comparison.after, c.side)), format_change(c.change_pct),
             format_change_interval(c.interval), c.verdict]
            for c in comparison.changes if c.case == case]
    return Table(["side", "metric", comparison.before.sweep_id, comparison.after.sweep_id, "change",
                  "95% CI of the change", "verdict"], rows)


def ratio_table(comparison: Comparison, case: str) -> Table:
    """Per side and metric: the ratio to the baseline in A and in B with both intervals."""
    baseline = comparison.after.baseline
    rows = [[f"{r.side} / {baseline}", r.metric, f"{_ratio(r.before)} -> {_ratio(r.after)}",
             _ratio_interval(r.before), _ratio_interval(r.after)]
            for r in comparison.ratios if r.case == case]
    return Table(["ratio", "metric", "A -> B", f"CI in {comparison.before.sweep_id}",
                  f"CI in {comparison.after.sweep_id}"], rows)


def _ratio(c: stats.Comparison | None) -> str:
    return "-" if c is None or math.isnan(c.ratio) else f"{c.ratio:.3f}"


def _ratio_interval(c: stats.Comparison | None) -> str:
    return "-" if c is None else format_interval(c)


def title(comparison: Comparison) -> str:
    return f"shasweep compare: {comparison.after.sweep_id} vs. {comparison.before.sweep_id}"


def _note(comparison: Comparison) -> str:
    return (f"A = the earlier batch {comparison.before.sweep_id}, B = {comparison.after.sweep_id}; change = "
            f"B's median against A's, with a 95% interval (given {MIN_RUNS} or more ok runs per "
            f"side in each sweep); a clear change of {comparison.highlight_pct:g}% or more is large. Ok runs "
            f"that passed their audit only.")


def _warning_text(comparison: Comparison) -> str:
    return "The two sweeps ran with different settings, so their numbers may not compare: " + "; ".join(
        comparison.warnings)


def _large_cells(table: Table, comparison: Comparison, case: str) -> frozenset[tuple[int, int]]:
    """The (row, column) cells of ``case_table`` that show a large change: bold in the Markdown."""
    large = [c.large for c in comparison.changes if c.case == case]
    return frozenset((i, j) for i, (row, big) in enumerate(zip(table.rows, large, strict=True)) if big
                     for j in range(4, len(row)))


def to_markdown(comparison: Comparison) -> str:
    sections = [f"# {md_text(title(comparison))}\n\n{md_text(_note(comparison))}"]
    if comparison.warnings:
        sections.append("## Warning: settings differ\n\n" + md_text(_warning_text(comparison)) + "\n\n"
                        + md_items(comparison.warnings))
    sections.append("## Sides\n\n" + markdown_table(sides_table(comparison)))
    sections.append("## Software\n\n" + (markdown_table(software_table(comparison)) if comparison.software
                                         else "No package version differs between the two sweeps."))
    for case in comparison.cases:
        table = case_table(comparison, case)
        text = f"## {md_text(case)}\n\n" + markdown_table(table, _large_cells(table, comparison, case))
        if comparison.ratios:
            text += "\n\nRatio to the baseline, A -> B:\n\n" + markdown_table(ratio_table(comparison, case))
        sections.append(text)
    return "\n\n".join(sections) + "\n"


def comparison_page(comparison: Comparison) -> Page:
    from orchestrator.render.page import Page  # imports Bokeh: only for a page

    page = Page(title(comparison))
    page.paragraph(_note(comparison), "note")
    if comparison.warnings:
        page.heading("Warning: settings differ")
        page.paragraph(_warning_text(comparison), "warning")
        page.items(comparison.warnings)
    page.heading("Sides")
    page.table(sides_table(comparison))
    page.heading("Software")
    if comparison.software:
        page.table(software_table(comparison))
    else:
        page.paragraph("No package version differs between the two sweeps.", "note")
    for case in comparison.cases:
        page.heading(case)
        page.table(case_table(comparison, case))
        if comparison.ratios:
            page.paragraph("Ratio to the baseline, A -> B:")
            page.table(ratio_table(comparison, case))
    return page


def _by_key(rows: list[MetricRow]) -> dict[tuple[str, str, str], MetricRow]:
    return {(r.case, r.side, r.metric): r for r in rows}
