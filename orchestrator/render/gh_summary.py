"""``shasweep report --format gh``: a GitHub job summary / pull-request comment in Markdown.

The verdict line first, then the clear changes (``analysis.decided``: one figure per compared case and
side, a change when its gate FAILed or its interval, widened for the cases judged together, lies
entirely above or below 1; largest first; each with the interval of its claim, a FAIL's as its gate
decided it), the cases a side added or removed, then the full table
(every metric as the report states it: a gated row as its gate decided it) in a collapsed
``<details>``. The whole stays under ``MAX_BYTES`` (a PR comment holds 65,536 characters): rows that
do not fit are left out and counted. Text from cases and benches renders as the characters it is
(``markdown.md_text``).
"""

from __future__ import annotations

import math

from orchestrator.analysis.decided import clear_changes
from orchestrator.analysis.report_model import MetricRow, Report
from orchestrator.analysis.stats import Comparison
from orchestrator.analysis.verdicts import format_interval
from orchestrator.render.markdown import md_text
from orchestrator.render.tables import format_number, one_sided_lines, verdict_text
from orchestrator.render.terminal import report_verdict_line

MAX_BYTES = 60_000
HEADER = ["case", "side", "metric", "{baseline} median", "median", "ratio", "interval", "gate"]


def gh_markdown(report: Report, max_bytes: int = MAX_BYTES) -> str:
    """The summary of ``report``, at most ``max_bytes`` UTF-8 bytes."""
    compared = [r for r in report.rows if r.comparison is not None]
    changed = clear_changes(report.decided)
    head = [f"### shasweep {md_text(report.sweep_id)}: {md_text(report_verdict_line(report))}", ""]
    rows_by = {(r.case, r.side, r.metric): r for r in report.rows}
    gates = {(g.gate, g.case, g.side, g.metric): g for g in report.gates}

    def line(case: str, side: str, metric: str, comparison: Comparison | None, gate: str) -> str:
        row, base = rows_by[case, side, metric], rows_by.get((case, report.baseline, metric))
        one_sided = report.presence(case, side)
        ratio = "-" if math.isnan(row.ratio) or one_sided else f"{row.ratio:.3f}"
        cells = [case, side, metric, format_number(base.summary.median if base else math.nan),
                 format_number(row.summary.median), ratio,
                 "-" if comparison is None or one_sided else format_interval(comparison), one_sided or gate]
        return "| " + " | ".join(md_text(c) for c in cells) + " |"

    def gate_of(r: MetricRow) -> str:
        verdict = gates.get((r.gate, r.case, r.side, r.metric))
        return verdict_text(verdict) if verdict else "-"

    header = [h.format(baseline=md_text(report.baseline)) for h in HEADER]
    table_head = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    reserve = 400  # the lines after each table
    parts = head + _headline(report, len(changed)) + [""]
    if changed:
        rows = [line(f.case, f.side, f.metric, f.claimed, verdict_text(f.gate) if f.gate else "-")
                for f in changed]
        shown = _fit(rows, max_bytes - 2 * reserve - _size(parts + table_head))
        parts += table_head + shown + _more(len(changed) - len(shown)) + [""]
    if one_sided := one_sided_lines(report):
        parts += [*(f"- {md_text(text)}" for text in one_sided), ""]
    parts += [f"<details><summary>All cases: {len(report.cases)} cases, {len(compared)} comparisons"
              "</summary>", "", *table_head]
    shown = _fit([line(r.case, r.side, r.metric, r.comparison, gate_of(r)) for r in compared],
                 max_bytes - reserve - _size(parts))
    parts += [*shown, *_more(len(compared) - len(shown)), "", "</details>"]
    return "\n".join(parts) + "\n"


def _headline(report: Report, changes: int) -> list[str]:
    """How many of the compared cases changed clearly, and what makes a change clear."""
    k = len(report.decided)
    judged = f"the ratio's interval, widened for the {k} cases judged together," if k > 1 else \
        "the ratio's interval"
    if changes:
        return [f"**{changes} clear change{'s' if changes != 1 else ''}** of {k} compared "
                f"case{'s' if k != 1 else ''} (a gate FAILed, or {judged} lies entirely above or below 1):"]
    return [f"No clear change in {k} compared case{'s' if k != 1 else ''}: no gate FAILed and {judged} "
            "includes 1."]


def _fit(lines: list[str], budget: int) -> list[str]:
    """The leading ``lines`` that fit in ``budget`` bytes."""
    kept: list[str] = []
    used = 0
    for text in lines:
        used += len(text.encode()) + 1
        if used > budget:
            break
        kept.append(text)
    return kept


def _more(count: int) -> list[str]:
    return [f"\n… and {count} more rows: see the full report (`shasweep report`)."] if count else []


def _size(lines: list[str]) -> int:
    return sum(len(text.encode()) + 1 for text in lines)
