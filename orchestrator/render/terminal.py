"""The report as the terminal shows it: a compact rich rendering that fits the console's width.

The full report (every column, every interval and p-value) is the Markdown in ``reports/<id>.md``;
this keeps what answers "did it pass, and by how much" at a glance: short SHAs, medians, ratios with
their interval, the gates, the runs not ok and any drift.
"""

from __future__ import annotations

import math

from rich.console import Console, Group, RenderableType
from rich.table import Table as RichTable
from rich.text import Text

from orchestrator.analysis import stats
from orchestrator.analysis.report_model import Report
from orchestrator.analysis.suites import SuiteSummary
from orchestrator.analysis.verdicts import Verdict
from orchestrator.render.tables import (
    confidence_note,
    format_change_interval,
    format_number,
    one_line,
    suite_table,
    summary_lines,
    verdict_text,
)
from orchestrator.render.verdict_line import verdict_line

SHORT_SHA = 10
VERDICT_STYLES: dict[Verdict, str] = {Verdict.PASS: "bold green", Verdict.FAIL: "bold red",
                                      Verdict.INCONCLUSIVE: "bold yellow", Verdict.NO_DATA: "bold magenta"}


def terminal_console() -> Console:
    """A console on stdout: colour only on a terminal, never syntax highlighting."""
    return Console(highlight=False, soft_wrap=False)


def render_report(report: Report, width: int) -> RenderableType:
    """The compact report: summary, sides, one table per case (medians of the ok runs, the ratio to
    the baseline and its interval), gates, runs not ok, drift."""
    parts: list[RenderableType] = [Text(f"shasweep report: {report.sweep_id}", style="bold")]
    lines = summary_lines(report)
    parts += [Text(lines[0]), Text(lines[-1])]  # status, run counts
    parts.append(_sides(report))
    if report.suites:  # a benchmark suite: its cases in one table per side, largest change first
        parts += [_suite(report, suite) for suite in report.suites]
    else:
        parts += [_case(report, case) for case in report.cases]
    if report.gates:
        parts.append(_gates(report))
        if (note := confidence_note(report)) is not None:
            parts.append(Text(note, style="dim"))
    if len(report.failures):
        parts.append(_failures(report, width))
    drifted = [d for d in report.drift if d.flagged]
    if drifted:
        parts.append(Text("DRIFT: " + "; ".join(f"{d.case} {d.side} {d.metric} {100 * d.change:+.1f}% "
                                                f"(95% CI {format_change_interval(d.interval)}) vs "
                                                f"{d.sweeps} earlier sweep(s)" for d in drifted),
                          style="yellow"))
    return Group(*parts)


def report_verdict_line(report: Report) -> str:
    """The report's verdict line, saying why when runs were not ok (exit 3)."""
    problems = [f"{len(report.failures)} run(s) not ok" if len(report.failures) else "",
                f"{report.missing} not run" if report.missing else ""]
    return verdict_line(report.gates, report.exit_code, ", ".join(p for p in problems if p) or None)


def _table(title: str) -> RichTable:
    return RichTable(title=title, title_justify="left", title_style="bold", box=None, pad_edge=False,
                     header_style="bold", show_edge=False)


def _sides(report: Report) -> RichTable:
    table = _table("sides")
    for name in ("side", "ref", "sha", "variant", "loaded"):
        table.add_column(name, overflow="fold")
    for side in report.sides:
        info = report.record.side(side)
        sha = info.sha or "-"
        loaded = report.audit[side]["git_sha"]
        mark = "same" if loaded == sha else loaded[:SHORT_SHA]
        label = f"{side} (baseline)" if side == report.baseline else side
        table.add_row(label, info.ref or "-", sha[:SHORT_SHA], info.variant or "-", mark)
    return table


def _case(report: Report, case: str) -> RichTable:
    others = [s for s in report.sides if s != report.baseline]
    table = _table(case)
    table.add_column("metric", no_wrap=True)
    for side in [report.baseline, *others]:
        table.add_column(side, justify="right", no_wrap=True)
    for side in others:
        table.add_column(f"{side}/{report.baseline}", justify="right", overflow="fold")
        table.add_column("interval", overflow="fold")
    for metric in report.metrics:
        cells = {r.side: r for r in report.rows if r.case == case and r.metric == metric}
        medians = [format_number(cells[s].summary.median) for s in [report.baseline, *others]]
        ratios = []
        for side in others:
            ratios += [_ratio(cells[side].ratio), _interval(cells[side].comparison)]
        table.add_row(metric, *medians, *ratios)
    return table


def _suite(report: Report, suite: SuiteSummary) -> RichTable:
    table = _table(f"suite: {suite.metric}, {suite.side} / {report.baseline} (largest change first)")
    contents = suite_table(report, suite)
    for i, name in enumerate(contents.header):
        table.add_column(name, overflow="fold", justify="right" if 0 < i < 4 else "left")
    for row in contents.rows:
        table.add_row(*row)
    return table


def _gates(report: Report) -> RichTable:
    table = _table("gates")
    for name in ("verdict", "metric", "side", "bound", "ratio"):
        table.add_column(name, no_wrap=True)
    table.add_column("interval", overflow="fold")
    table.add_column("case", overflow="fold")
    for g in report.gates:
        verdict = Text(verdict_text(g), style="dim" if g.waived else VERDICT_STYLES.get(g.verdict, ""))
        table.add_row(verdict, g.metric, g.side, g.bound, _ratio(g.ratio), _interval(g.comparison), g.case)
    return table


def _ratio(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.3f}"


def _interval(comparison: stats.Comparison | None) -> str:
    """``95% [0.941, 0.962]``; ``-`` when there is none."""
    if comparison is None or not comparison.has_interval:
        return "-"
    return f"{100 * comparison.confidence:.4g}% [{comparison.low:.3f}, {comparison.high:.3f}]"


def _failures(report: Report, width: int) -> RichTable:
    """One line per run not ok; the error is cut to the width left (the full text is in the Markdown)."""
    table = _table("runs not ok")
    rows = [(str(f.run_key)[:SHORT_SHA], str(f.side), str(f.status), one_line(f.error))
            for f in report.failures.itertuples()]
    names = ("run", "side", "status")
    widths = [max(len(name), *(len(row[i]) for row in rows)) for i, name in enumerate(names)]
    for name, column_width in zip(names, widths, strict=True):
        table.add_column(name, no_wrap=True, width=column_width, style="red" if name == "status" else "")
    left = width - sum(widths) - 2 * len(widths)  # a column's padding: 1 on each side, none at the edges
    table.add_column("error", no_wrap=True, overflow="ellipsis", max_width=max(left, 10))
    for row in rows:
        table.add_row(*row)
    return table
