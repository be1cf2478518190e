"""The HTML report of one sweep: a verdict banner (counts and exit code), a forest plot per gate
metric (each ratio with its interval and the bounds), the Markdown report's tables (a compact Sides
table: short SHAs and class names, the full text on hover), and per case the throughput of every run
by side (joined per round when paired, disturbed runs ringed), the phase breakdown per side (for a
protocol whose phases each time the whole run, e.g. wall, user and sys time: each of them per run
instead) and the per-step timeline of every run; runs that are not ok (audit failures included)
highlighted. The runs and steps it plots come from ``analysis.plotted_runs``; the session writes it to
``<results>/reports/<id>.html``.
"""

from __future__ import annotations

import pandas as pd
from bokeh.model import Model

from orchestrator.analysis.plotted_runs import TIMELINE_PHASES, PlottedRuns
from orchestrator.analysis.report_model import Report
from orchestrator.capabilities import Capability, describe_stored
from orchestrator.errors import EXIT_GATE_INCONCLUSIVE, EXIT_OK
from orchestrator.render import count_section, host_section, lockstep_section
from orchestrator.render.forest import forest_plot, gate_bounds
from orchestrator.render.page import Page
from orchestrator.render.page_limits import forest_rows, plotted_cases, summarised_steps
from orchestrator.render.plots import (
    breakdown_plot,
    lockstep_blocks_plot,
    per_run_plot,
    phase_medians,
    timeline_plot,
)
from orchestrator.render.tables import (
    PROCESS_NOTE,
    Table,
    case_counts,
    case_table,
    confidence_note,
    drift_table,
    failures_table,
    gates_table,
    host_lines,
    one_sided_lines,
    process_lines,
    process_table,
    sides_table,
    suite_table,
    summary_lines,
)
from orchestrator.render.terminal import SHORT_SHA, report_verdict_line
from orchestrator.render.waiver_tables import WAIVERS_NOTE, gates_line, waivers_table
from orchestrator.spec.commands import is_envruntime_command
from orchestrator.spec.schema import SweepSpec

BANNER_CLASSES: dict[int, str] = {EXIT_OK: "pass", EXIT_GATE_INCONCLUSIVE: "warn"}  # any other exit: fail


def timeline_phase(steps: pd.DataFrame) -> str | None:
    """The first of ``TIMELINE_PHASES`` present in ``steps``, else the first phase it holds."""
    present = list(dict.fromkeys(steps["phase"]))
    return next((p for p in TIMELINE_PHASES if p in present), present[0] if present else None)


def throughput_label(spec: SweepSpec) -> str:
    """The throughput axis: the protocol's unit (protocol time: runs), envruntime's env steps, else the
    bench's own unit."""
    unit = describe_stored(spec.protocol.value).throughput_unit
    if unit is not None:
        return f"throughput ({unit} / s)"
    if is_envruntime_command(spec.command):
        return "throughput (env steps / s)"
    return "throughput (as the bench reports it, per s)"


def sweep_page(report: Report, plotted: PlottedRuns) -> Page:
    """The page of ``report``; ``plotted`` (its runs, audited, every column, and its steps) feeds the
    plots."""
    runs, steps = plotted.runs, plotted.steps
    page = Page(f"shasweep report: {report.sweep_id}")
    page.banner(report_verdict_line(report), BANNER_CLASSES.get(report.exit_code, "fail"))
    page.items(summary_lines(report))
    if report.gates:
        page.heading("Gate verdicts")
        page.paragraph(gates_line(report))
        if (note := confidence_note(report)) is not None:
            page.paragraph(note, "note")
        page.figures(forest_plots(report))
        page.table(gates_table(report))
    if count_section.has_counts(report):
        page.heading("Instructions and time")
        page.paragraph(count_section.COUNT_NOTE, "note")
        page.items(count_section.disagreement_lines(report))
    if report.lockstep is not None:
        page.heading("Lockstep")
        page.paragraph(lockstep_section.LOCKSTEP_NOTE, "note")
        page.items(lockstep_section.order_lines(report.lockstep))
        if report.lockstep.rounds:
            page.table(lockstep_section.pairs_table(report.lockstep))
    if report.waivers:
        page.heading("Waivers")
        page.paragraph(WAIVERS_NOTE, "note")
        page.table(waivers_table(report))
    page.heading("Sides")
    page.table(compact_sides_table(report))
    _suite_section(page, report)
    phase = timeline_phase(steps)
    shown = plotted_cases(report)
    for case in shown:
        _case_section(page, report, case, runs, steps, phase)
    if len(shown) < len(report.cases):
        page.paragraph(f"{len(report.cases) - len(shown)} more cases are not drawn here (the {len(shown)} "
                       "above are those whose gates did not pass, then the largest changes): the tables "
                       "above hold each one's figures, the Markdown report its full table.", "note")
    if host_section.shown(report):
        page.heading("Hosts")
        page.paragraph(host_section.HOSTS_NOTE)
        page.items(host_section.host_lines_by_host(report))
        for metric, table in host_section.host_median_tables(report):
            page.paragraph(f"median {metric} per host")
            page.table(table)
    if report.drift:
        page.heading("Drift against earlier sweeps of the same SHAs")
        page.table(drift_table(report))
    if len(report.failures):
        page.heading("Runs not ok")
        page.table(failures_table(report))
    page.heading("Host")
    page.items(host_lines(report))
    return page


def _suite_section(page: Page, report: Report) -> None:
    """A suite's tables (its cases by change, the geometric mean), its added and removed cases and
    its bench process's own figures."""
    for suite in report.suites:
        page.heading(f"Suite: {suite.metric}, {suite.side} / {report.baseline}")
        page.table(suite_table(report, suite))
    if lines := one_sided_lines(report):
        page.items(lines)
    if report.processes:
        page.heading("Suite process")
        page.paragraph(PROCESS_NOTE, "note")
        page.items(process_lines(report))
        page.table(process_table(report))


def _case_section(page: Page, report: Report, case: str, runs: pd.DataFrame, steps: pd.DataFrame,
                  phase: str | None) -> None:
    """One case: its gates (when the sweep has several cases), its table, and its plots."""
    page.heading(case)
    page.paragraph(f"runs ok/not ok: {case_counts(report, case)}")
    case_gates = _rows_of_case(gates_table(report), case)
    if len(report.cases) > 1 and case_gates.rows:
        page.table(case_gates)
    page.table(case_table(report, case))
    mine = runs[runs["case"] == case] if len(runs) else runs
    if not len(mine):
        page.paragraph("no runs of this case left results", "note")
        return
    paired = any(r.comparison.paired for r in report.rows
                 if r.case == case and r.metric == "throughput" and r.comparison is not None)
    figures = [per_run_plot(mine, report.sides, f"{case}: throughput per run", paired=paired,
                            y_label=throughput_label(report.record.spec)),
               *phase_plots(mine, report, case, paired)]
    mine_steps = steps[(steps["phase"] == phase) & steps["run_key"].isin(mine["run_key"])]
    case_steps, width = summarised_steps(mine_steps)
    if len(case_steps):
        shaded = " (warm-up shaded)" if case_steps["warmup"].any() else ""
        binned = f", median of each {width}" if width > 1 else ""
        figures.append(timeline_plot(case_steps, mine, report.sides, phase,
                                     f"{case}: {phase} per {_step_word(report.record.spec)}{binned}{shaded}",
                                     x_label=_step_word(report.record.spec)))
    page.figures(figures)
    if report.lockstep is not None and "blocks" in mine:
        last = mine[mine["blocks"].notna()]
        last = last[last["repeat"] == last["repeat"].max()] if len(last) else last
        blocks = lockstep_blocks_plot(last, report.sides, f"{case}: the blocks of lockstep round "
                                      f"{int(last['repeat'].max()) if len(last) else '-'}, per side")
        if blocks is not None:
            page.figures([blocks])


def phase_plots(runs: pd.DataFrame, report: Report, case: str, paired: bool) -> list[Model]:
    """The phase breakdown per side (stacked medians), where the runs report two phases or more (one
    phase is the whole step: nothing to break down); for a protocol whose phases each time the whole
    run (wall, user and sys time), one per-run plot of each instead: they are not parts of a whole."""
    spec = report.record.spec
    info = describe_stored(spec.protocol.value)
    if info.has(Capability.WHOLE_RUN_PHASES):
        return [per_run_plot(runs, report.sides, f"{case}: {phase} per run", metric=phase, paired=paired,
                             y_label=f"{phase} (ms per run)")
                for phase in info.phases or () if phase in runs and runs[phase].notna().any()]
    if len(phase_medians(runs, report.sides).columns) < 2:
        return []
    unit = "ms per vector step" if is_envruntime_command(spec.command) else "ms per step"
    return [breakdown_plot(runs, report.sides, f"{case}: phase breakdown",
                           y_label=f"phase time ({unit}, median of run means)")]


def _step_word(spec: SweepSpec) -> str:
    """What one step row of the sweep's bench is: a vector step (envruntime), a measured run (a
    protocol that runs the command itself), else a step."""
    if is_envruntime_command(spec.command):
        return "vector step"
    return "measured run" if describe_stored(spec.protocol.value).has(Capability.MEASURE_PARAM) else "step"


def forest_plots(report: Report) -> list[Model]:
    """One forest plot per gate metric, in the order the gates list them."""
    spec_gates = report.record.spec.gates
    metrics = list(dict.fromkeys(g.metric for g in report.gates))
    plots = []
    for metric in metrics:
        verdicts = [g for g in report.gates if g.metric == metric]
        drawn = forest_rows(verdicts)
        title = f"gates on {metric}" + (f": the {len(drawn)} of {len(verdicts)} furthest from passing"
                                        if len(drawn) < len(verdicts) else "")
        plots.append(forest_plot(metric, drawn, gate_bounds(spec_gates, drawn), title))
    return plots


def compact_sides_table(report: Report) -> Table:
    """The Sides table, narrow: short SHAs and class names, thread settings in one cell line; every
    shortened cell has its full text on hover."""
    full = sides_table(report)
    shorteners = {"sha": _short_sha, "loaded sha": _short_sha, "env class": _short_class,
                  "backend class": _short_class, "bench threads": _short_threads}
    rows, hovers = [], {}
    for i, row in enumerate(full.rows):
        short = []
        for j, (name, cell) in enumerate(zip(full.header, row, strict=True)):
            text = shorteners.get(name, str)(cell)
            if text != cell:
                hovers[i, j] = cell
            short.append(text)
        rows.append(short)
    return Table(full.header, rows, hovers)


def _short_sha(text: str) -> str:
    return ", ".join(sha[:SHORT_SHA] for sha in text.split(", "))


def _short_class(text: str) -> str:
    return ", ".join(name.rsplit(".", 1)[-1] for name in text.split(", "))


def _short_threads(text: str) -> str:
    """``OMP=2 MKL=2 ...`` with one value everywhere as ``7 vars = 2``."""
    pairs = [item.partition("=") for item in text.split()]
    values = {value for _, sep, value in pairs if sep}
    if len(pairs) > 2 and len(values) == 1 and all(sep for _, sep, _ in pairs) and "," not in text:
        return f"{len(pairs)} vars = {values.pop()}"
    return text


def _rows_of_case(table: Table, case: str) -> Table:
    column = table.header.index("case")
    return Table(table.header, [row for row in table.rows if row[column] == case])
