"""``shasweep compare A B``: the per case and side medians of two sweeps side by side.

Sweep ``A`` is the earlier batch (e.g. yesterday's baseline run), ``B`` the new one; every metric
shows both summaries (ok, audited runs only, as in the report) and the change of the median in
percent. Cases and sides are matched by name; only those both sweeps have are compared.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from orchestrator.analysis import stats
from orchestrator.analysis.report_model import MetricRow, Report, make_report
from orchestrator.errors import InvalidInputError
from orchestrator.render.markdown import markdown_table
from orchestrator.render.page import Page
from orchestrator.render.tables import Table, format_summary


@dataclass(frozen=True)
class Change:
    """One metric of one (case, side) in both sweeps."""

    case: str
    side: str
    metric: str
    before: stats.Summary
    after: stats.Summary

    @property
    def change_pct(self) -> float:
        """``(after median / before median - 1) * 100``; NaN when undefined."""
        return (stats.ratio(self.after.median, self.before.median) - 1.0) * 100.0


@dataclass(frozen=True)
class Comparison:
    """Two sweeps' reports and the changes between them."""

    before: Report
    after: Report
    cases: list[str]
    sides: list[str]
    changes: list[Change]


def compare_reports(before: Report, after: Report) -> Comparison:
    """Match the cases, sides and metrics both reports have; ``InvalidInputError`` when none match."""
    cases = [c for c in after.cases if c in before.cases]
    sides = [s for s in after.sides if s in before.sides]
    if not cases or not sides:
        raise InvalidInputError(
            f"sweeps {before.sweep_id} and {after.sweep_id} share no case and side: "
            f"cases {before.cases} vs {after.cases}, sides {before.sides} vs {after.sides}")
    old, new = _by_key(before.rows), _by_key(after.rows)
    changes = [Change(case, side, metric, old[case, side, metric].summary, new[case, side, metric].summary)
               for case in cases for side in sides for metric in after.metrics
               if (case, side, metric) in old]
    return Comparison(before, after, cases, sides, changes)


def make_comparison(results_root: Path, before_id: str, after_id: str) -> Comparison:
    return compare_reports(make_report(results_root, before_id), make_report(results_root, after_id))


def sides_table(comparison: Comparison) -> Table:
    """Each compared side's SHA in both sweeps."""
    def sha(report: Report, side: str) -> str:
        return str(report.record.get("sides", {}).get(side, {}).get("sha", "-"))

    before, after = comparison.before, comparison.after
    rows = [[side, sha(before, side), sha(after, side)] for side in comparison.sides]
    return Table(["side", f"sha in {before.sweep_id}", f"sha in {after.sweep_id}"], rows)


def case_table(comparison: Comparison, case: str) -> Table:
    """Per side and metric: both summaries and the change of the median."""
    rows = [[c.side, c.metric, format_summary(c.before), format_summary(c.after), format_change(c.change_pct)]
            for c in comparison.changes if c.case == case]
    return Table(["side", "metric", comparison.before.sweep_id, comparison.after.sweep_id, "change"], rows)


def format_change(pct: float) -> str:
    return "-" if math.isnan(pct) else f"{pct:+.1f}%"


def title(comparison: Comparison) -> str:
    return f"shasweep compare: {comparison.after.sweep_id} vs. {comparison.before.sweep_id}"


def to_markdown(comparison: Comparison) -> str:
    sections = [f"# {title(comparison)}\n\nchange = median of {comparison.after.sweep_id} against the "
                f"earlier batch {comparison.before.sweep_id}; ok runs that passed their audit only.",
                "## Sides\n\n" + markdown_table(sides_table(comparison))]
    sections += [f"## {case}\n\n" + markdown_table(case_table(comparison, case)) for case in comparison.cases]
    return "\n\n".join(sections) + "\n"


def comparison_page(comparison: Comparison) -> Page:
    page = Page(title(comparison))
    page.paragraph(f"change = median of {comparison.after.sweep_id} against the earlier batch "
                   f"{comparison.before.sweep_id}; ok runs that passed their audit only.", "note")
    page.heading("Sides")
    page.table(sides_table(comparison))
    for case in comparison.cases:
        page.heading(case)
        page.table(case_table(comparison, case))
    return page


def _by_key(rows: list[MetricRow]) -> dict[tuple[str, str, str], MetricRow]:
    return {(r.case, r.side, r.metric): r for r in rows}
