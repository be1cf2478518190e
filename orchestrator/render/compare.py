"""``shasweep compare A B`` rendered: the model (``analysis.compare_model.SweepComparison``) as Markdown
and as an HTML page. Above the cases: the settings the two sweeps ran differently, the package
versions that differ and each side's SHA in both; per case its metrics' changes (a large clear change
in bold) and the ratios to the baseline in A and in B."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from orchestrator.analysis import stats
from orchestrator.analysis.compare_model import SweepComparison
from orchestrator.analysis.report_model import Report
from orchestrator.analysis.stats import MIN_RUNS
from orchestrator.analysis.verdicts import format_interval
from orchestrator.render.markdown import markdown_table, md_items, md_text
from orchestrator.render.tables import Table, format_change, format_change_interval, format_summary

if TYPE_CHECKING:  # Bokeh: only for a page
    from orchestrator.render.page import Page


def compare_sides_table(comparison: SweepComparison) -> Table:
    """Each compared side's SHA in both sweeps."""
    def sha(report: Report, side: str) -> str:
        return report.record.side(side).sha or "-"

    before, after = comparison.before, comparison.after
    rows = [[side, sha(before, side), sha(after, side)] for side in comparison.sides]
    return Table(["side", f"sha in {before.sweep_id}", f"sha in {after.sweep_id}"], rows)


def software_table(comparison: SweepComparison) -> Table:
    """The package versions that differ: from the bench's header audit and the host record."""
    rows = [[c.package, c.source, ", ".join(c.before) or "absent", ", ".join(c.after) or "absent"]
            for c in comparison.software]
    return Table(["package", "reported by", comparison.before.sweep_id, comparison.after.sweep_id], rows)


def compare_case_table(comparison: SweepComparison, case: str) -> Table:
    """Per side and metric: both summaries, the change of the median, its interval and verdict."""
    def ok_runs(report: Report, side: str) -> int:
        return report.counts.get((case, side), (0, 0))[0]

    rows = [[c.side, c.metric, format_summary(c.before, ok_runs(comparison.before, c.side)),
             format_summary(c.after, ok_runs(comparison.after, c.side)), format_change(c.change_pct),
             format_change_interval(c.interval), c.verdict]
            for c in comparison.changes if c.case == case]
    return Table(["side", "metric", comparison.before.sweep_id, comparison.after.sweep_id, "change",
                  "95% CI of the change", "verdict"], rows)


def ratio_table(comparison: SweepComparison, case: str) -> Table:
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


def compare_title(comparison: SweepComparison) -> str:
    return f"shasweep compare: {comparison.after.sweep_id} vs. {comparison.before.sweep_id}"


def _note(comparison: SweepComparison) -> str:
    return (f"A = the earlier batch {comparison.before.sweep_id}, B = {comparison.after.sweep_id}; change = "
            f"B's median against A's, with a 95% interval (given {MIN_RUNS} or more ok runs per "
            f"side in each sweep); a clear change of {comparison.highlight_pct:g}% or more is large. Ok runs "
            f"that passed their audit only.")


def _warning_text(comparison: SweepComparison) -> str:
    return "The two sweeps ran with different settings, so their numbers may not compare: " + "; ".join(
        comparison.warnings)


def _large_cells(table: Table, comparison: SweepComparison, case: str) -> frozenset[tuple[int, int]]:
    """The (row, column) cells of ``compare_case_table`` that show a large change: bold in the Markdown."""
    large = [c.large for c in comparison.changes if c.case == case]
    return frozenset((i, j) for i, (row, big) in enumerate(zip(table.rows, large, strict=True)) if big
                     for j in range(4, len(row)))


def comparison_markdown(comparison: SweepComparison) -> str:
    sections = [f"# {md_text(compare_title(comparison))}\n\n{md_text(_note(comparison))}"]
    if comparison.warnings:
        sections.append("## Warning: settings differ\n\n" + md_text(_warning_text(comparison)) + "\n\n"
                        + md_items(comparison.warnings))
    sections.append("## Sides\n\n" + markdown_table(compare_sides_table(comparison)))
    sections.append("## Software\n\n" + (markdown_table(software_table(comparison)) if comparison.software
                                         else "No package version differs between the two sweeps."))
    for case in comparison.cases:
        table = compare_case_table(comparison, case)
        text = f"## {md_text(case)}\n\n" + markdown_table(table, _large_cells(table, comparison, case))
        if comparison.ratios:
            text += "\n\nRatio to the baseline, A -> B:\n\n" + markdown_table(ratio_table(comparison, case))
        sections.append(text)
    return "\n\n".join(sections) + "\n"


def comparison_page(comparison: SweepComparison) -> Page:
    from orchestrator.render.page import Page  # imports Bokeh: only for a page

    page = Page(compare_title(comparison))
    page.paragraph(_note(comparison), "note")
    if comparison.warnings:
        page.heading("Warning: settings differ")
        page.paragraph(_warning_text(comparison), "warning")
        page.items(comparison.warnings)
    page.heading("Sides")
    page.table(compare_sides_table(comparison))
    page.heading("Software")
    if comparison.software:
        page.table(software_table(comparison))
    else:
        page.paragraph("No package version differs between the two sweeps.", "note")
    for case in comparison.cases:
        page.heading(case)
        page.table(compare_case_table(comparison, case))
        if comparison.ratios:
            page.paragraph("Ratio to the baseline, A -> B:")
            page.table(ratio_table(comparison, case))
    return page
