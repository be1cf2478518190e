"""The report as the terminal shows it: a compact rich rendering that fits the console's width.

The full report (every column, every interval and p-value) is the Markdown in ``reports/<id>.md``;
this keeps what answers "did it pass, and by how much" at a glance: short SHAs, medians, ratios with
their interval, the gates, the runs not ok and any drift.
"""

from __future__ import annotations

import math

from rich.console import Group, RenderableType
from rich.text import Text

from orchestrator.analysis import stats
from orchestrator.analysis.report_model import Report
from orchestrator.analysis.suites import SuiteSummary
from orchestrator.analysis.verdicts import Verdict, bounds
from orchestrator.capabilities import describe_stored
from orchestrator.display import quantity
from orchestrator.printable import printable
from orchestrator.render.fit import COMFORTABLE, Column, fit_table, shared_prefix
from orchestrator.render.tables import (
    confidence_note,
    format_change_interval,
    format_sd,
    one_line,
    one_sided_lines,
    process_lines,
    process_table,
    suite_table,
    summary_lines,
    verdict_text,
    warning_lines,
)
from orchestrator.render.verdict_line import verdict_line
from orchestrator.spec.commands import passes_variant

SHORT_SHA = 10
VERDICT_STYLES: dict[Verdict, str] = {Verdict.PASS: "bold green", Verdict.FAIL: "bold red",
                                      Verdict.INCONCLUSIVE: "bold yellow", Verdict.NO_DATA: "bold magenta"}


def render_report(report: Report, width: int) -> RenderableType:
    """The compact report, every table fitted to ``width`` (``render.fit``: columns left out or
    abbreviated, never a word split): summary, sides, one table per case (medians of the ok runs, the
    ratio to the baseline and its interval), gates, runs not ok, drift."""
    parts: list[RenderableType] = [_line(f"shasweep report: {report.sweep_id}", style="bold")]
    lines = summary_lines(report)
    parts += [_line(lines[0]), *(_line(w, style="yellow") for w in warning_lines(report)),
              _line(next(line for line in lines if line.startswith("runs: ")))]
    parts += _fitted(_sides(report), "sides", width)
    prefix = shared_prefix(report.cases) if report.suites else ""
    if prefix:
        parts.append(_line(f"case names below without the prefix they all share: {prefix}", style="dim"))
    if report.suites:  # a benchmark suite: its cases in one table per side, largest change first
        for suite in report.suites:
            title = f"suite: {suite.metric}, {suite.side} / {report.baseline} (largest change first)"
            parts += _fitted(_suite(report, suite, prefix), title, width)
        parts += [_line(text) for text in one_sided_lines(report, lambda case: case.removeprefix(prefix))]
        if report.processes:
            parts += _fitted(_processes(report), "suite process (per suite run, not per case)", width)
            parts += [_line(text) for text in process_lines(report)]
    else:
        for case in report.cases:
            parts += _fitted(_case(report, case), case, width)
    if report.gates:
        parts += _fitted(_gates(report, prefix), "gates", width)
        if (note := confidence_note(report)) is not None:
            parts.append(_line(note, style="dim"))
    if len(report.failures):
        parts += _fitted(_failures(report), "runs not ok", width)
    drifted = [d for d in report.drift if d.flagged]
    if drifted:
        parts.append(_line("DRIFT: " + "; ".join(f"{d.case} {d.side} {d.metric} {100 * d.change:+.1f}% "
                                                 f"(95% CI {format_change_interval(d.interval)}) vs "
                                                 f"{d.sweeps} earlier sweep(s)" for d in drifted),
                           style="yellow"))
    return Group(*parts)


def _line(text: str, style: str = "") -> Text:
    """A line of prose (``printable``): wrapped between words; a word longer than the line is cut with
    an ellipsis."""
    return Text(printable(text), style=style, overflow="ellipsis")


def _fitted(columns: list[Column], title: str, width: int) -> list[RenderableType]:
    """The table of ``columns`` fitted to ``width``, and a note naming the columns it left out."""
    table, dropped = fit_table(title, columns, width)
    if not dropped:
        return [table]
    return [table, _line(f"(left out at {width} columns: {', '.join(dropped)}; the Markdown report has them)",
                         style="dim")]


def report_verdict_line(report: Report) -> str:
    """The report's verdict line, saying why when runs were not ok (exit 3) and how many of a suite's
    cases were on one side only (not gated)."""
    added = sum(len(cases.added) for cases in report.one_sided.values())
    removed = sum(len(cases.removed) for cases in report.one_sided.values())
    problems = [f"{len(report.failures)} run(s) not ok" if len(report.failures) else "",
                f"{report.missing} not run" if report.missing else "",
                f"{added} case(s) added, {removed} removed: not gated" if added or removed else ""]
    return verdict_line(report.gates, report.exit_code, ", ".join(p for p in problems if p) or None)


def _sides(report: Report) -> list[Column]:
    """side, ref, SHA; the variant where the command passes one; the SHA the bench loaded where it
    reports one."""
    rows = []
    for side in report.sides:
        info = report.record.side(side)
        sha = info.sha or "-"
        loaded = report.audit[side]["git_sha"]
        rows.append((f"{side} (baseline)" if side == report.baseline else side, info.ref or "-",
                     sha[:SHORT_SHA], info.variant or "-",
                     "-" if loaded == "-" else "same" if loaded == sha else loaded[:SHORT_SHA]))
    columns = [Column("side", [r[0] for r in rows]), Column("ref", [r[1] for r in rows], shrink=True),
               Column("sha", [r[2] for r in rows])]
    if passes_variant(report.record.spec.command):
        columns.append(Column("variant", [r[3] for r in rows], drop=1))
    if any(r[4] != "-" for r in rows):
        columns.append(Column("loaded", [r[4] for r in rows], drop=2))
    return columns


def _case(report: Report, case: str) -> list[Column]:
    """metric, each side's median (SI prefixes, 3 digits), then each other side's ratio to the baseline,
    its interval and how steady the metric was from round to round (left out first: the other sides'
    medians, which their ratios restate, then the round s.d., then the intervals, then the ratios of
    all but the first other side)."""
    others = [s for s in report.sides if s != report.baseline]
    cells = {(r.side, r.metric): r for r in report.rows if r.case == case}
    unit = describe_stored(report.record.spec.protocol.value).throughput_unit
    columns = [Column("metric", list(report.metrics), shrink=True)]
    columns += [Column(side, [quantity(cells[side, m].summary.median, m, unit) for m in report.metrics],
                       justify="right", drop=None if side == report.baseline else 30 + i)
                for i, side in enumerate([report.baseline, *others])]
    for i, side in enumerate(others):
        ratio = f"{side}/{report.baseline}"
        columns.append(Column(ratio, [_ratio(cells[side, m].ratio) for m in report.metrics], justify="right",
                              drop=None if i == 0 else 10 + i))
        columns.append(Column("interval", [_interval(cells[side, m].comparison) for m in report.metrics],
                              drop=20 + i, name=f"{ratio} interval"))
        columns.append(Column("round s.d.", [format_sd(cells[side, m].round_sd) for m in report.metrics],
                              justify="right", drop=25 + i, name=f"{ratio} round s.d."))
    return columns


def _suite(report: Report, suite: SuiteSummary, prefix: str = "") -> list[Column]:
    """The suite's table (``tables.suite_table``), case names without ``prefix``: the medians left out
    first (case names kept whole up to 48 characters), then case names (in the middle) and intervals
    abbreviated, then the intervals, then the gate column left out."""
    contents = suite_table(report, suite)
    drops = [None, 30, 31, None, 20, 10]  # case, baseline, side, ratio, interval, gate
    names = [row[0].removeprefix(prefix) for row in contents.rows[:-1]]
    total = len(suite.cases)
    covered = f"{suite.common} of {total}" if suite.common < total else f"{total}"
    names.append(f"geometric mean, {covered} cases")  # its rounds and pairing: in the Markdown
    return [Column(name, names if i == 0 else [row[i] for row in contents.rows], shrink=i in (0, 4),
                   drop=drops[i], justify="right" if 0 < i < 4 else "left", cut="middle" if i == 0 else "end",
                   keep=48 if i == 0 else COMFORTABLE)
            for i, name in enumerate(contents.header)]


def _processes(report: Report) -> list[Column]:
    """The suite process's table (``tables.process_table``, medians only): the other sides' medians
    left out first, then the ratios but the first."""
    contents = process_table(report, spread=False)
    others = len(report.sides) - 1
    drops = [None, None, *(30 + i for i in range(others)),
             *(None if i == 0 else 10 + i for i in range(others))]
    return [Column(name, [row[i] for row in contents.rows], drop=drops[i], shrink=i == 0 or i > others + 1)
            for i, name in enumerate(contents.header)]


def _gates(report: Report, prefix: str = "") -> list[Column]:
    """verdict, metric, side, bound, ratio, interval, case (the interval left out first, then the
    bound; case names without ``prefix``, abbreviated in the middle)."""
    gates = report.gates
    verdicts = [Text(verdict_text(g), style="dim" if g.waived else VERDICT_STYLES.get(g.verdict, ""))
                for g in gates]
    return [Column("verdict", verdicts), Column("metric", [g.metric for g in gates], shrink=True),
            Column("side", [g.side for g in gates]), Column("bound", [g.bound for g in gates], drop=2),
            Column("ratio", [_ratio(g.ratio) for g in gates], justify="right"),
            Column("interval", [_interval(g.comparison) for g in gates], drop=3),
            Column("case", [g.case.removeprefix(prefix) for g in gates], shrink=True, cut="middle")]


def _ratio(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.3f}"


def _interval(comparison: stats.Comparison | None) -> str:
    """``95% [0.941, 0.962]``; ``-`` when there is none."""
    if comparison is None or not comparison.has_interval:
        return "-"
    return f"{100 * comparison.confidence:.4g}% {bounds(comparison.low, comparison.high)}"


def _failures(report: Report) -> list[Column]:
    """One line per run not ok; the error abbreviated to the width left (the full text is in the
    Markdown)."""
    rows = [(str(f.run_key)[:SHORT_SHA], str(f.side), str(f.status), one_line(f.error))
            for f in report.failures.itertuples()]
    return [Column("run", [r[0] for r in rows]), Column("side", [r[1] for r in rows]),
            Column("status", [r[2] for r in rows], style="red"),
            Column("error", [r[3] for r in rows], shrink=True)]
