"""The HTML report of one sweep: the Markdown report's tables plus, per case, the throughput of every
run by side, the phase breakdown per side and the per-step timeline of every run; gate verdicts and
runs that are not ok (audit failures included) highlighted. Written to ``<results>/reports/<id>.html``.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow.dataset as ds

from orchestrator.analysis.report_model import Report
from orchestrator.analysis.run_audit import apply_audit
from orchestrator.render import hosts
from orchestrator.render.page import Page
from orchestrator.render.plots import breakdown_plot, throughput_plot, timeline_plot
from orchestrator.render.tables import (
    Table,
    case_counts,
    case_table,
    drift_table,
    failures_table,
    gates_table,
    host_lines,
    sides_table,
    summary_lines,
)
from orchestrator.store.parquet import read_runs, steps_dir

# The per-step timeline shows the first of these a sweep's steps report.
TIMELINE_PHASES: tuple[str, ...] = ("collector_step_ms", "env_step_ms", "physics_ms")
STEP_COLUMNS: list[str] = ["run_key", "step", "warmup", "phase", "ms"]


def load_steps(results_root: Path, sweep_id: str, phases: tuple[str, ...] = TIMELINE_PHASES) -> pd.DataFrame:
    """The sweep's per-step timings of ``phases`` only (empty when it wrote none)."""
    path = steps_dir(results_root, sweep_id)
    if not path.is_dir():
        return pd.DataFrame(columns=STEP_COLUMNS)
    table = ds.dataset(path, format="parquet").to_table(columns=STEP_COLUMNS,
                                                         filter=ds.field("phase").isin(list(phases)))
    return table.to_pandas()


def timeline_phase(steps: pd.DataFrame) -> str | None:
    """The first of ``TIMELINE_PHASES`` present in ``steps``."""
    present = set(steps["phase"])
    return next((p for p in TIMELINE_PHASES if p in present), None)


def sweep_page(report: Report, runs: pd.DataFrame, steps: pd.DataFrame) -> Page:
    """The page of ``report``; ``runs`` (audited, every column) and ``steps`` feed the plots."""
    page = Page(f"shasweep report: {report.sweep_id}")
    page.items(summary_lines(report))
    if report.gates:
        page.heading("Gate verdicts")
        page.table(gates_table(report))
    page.heading("Sides")
    page.table(sides_table(report))
    phase = timeline_phase(steps)
    for case in report.cases:
        page.heading(case)
        page.paragraph(f"runs ok/not ok: {case_counts(report, case)}")
        case_gates = _rows_of_case(gates_table(report), case)
        if len(report.cases) > 1 and case_gates.rows:
            page.table(case_gates)
        page.table(case_table(report, case))
        mine = runs[runs["case"] == case] if len(runs) else runs
        if not len(mine):
            page.paragraph("no runs of this case left results", "note")
            continue
        figures = [throughput_plot(mine, report.sides, f"{case}: throughput per run"),
                   breakdown_plot(mine, report.sides, f"{case}: phase breakdown")]
        case_steps = steps[(steps["phase"] == phase) & steps["run_key"].isin(mine["run_key"])]
        if len(case_steps):
            figures.append(timeline_plot(case_steps, mine, report.sides, phase,
                                         f"{case}: {phase} per step (warm-up shaded)"))
        page.figures(figures)
    if hosts.shown(report):
        page.heading("Hosts")
        page.paragraph(hosts.HOSTS_NOTE)
        page.items(hosts.host_lines_by_host(report))
        for metric, table in hosts.host_median_tables(report):
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


def write_sweep_html(results_root: Path, report: Report) -> Path:
    """Render ``report`` with its sweep's runs and steps to ``<results>/reports/<id>.html``."""
    runs = apply_audit(read_runs(results_root, report.sweep_id), report.record)
    page = sweep_page(report, runs, load_steps(results_root, report.sweep_id))
    return page.write(results_root / "reports" / f"{report.sweep_id}.html")


def _rows_of_case(table: Table, case: str) -> Table:
    column = table.header.index("case")
    return Table(table.header, [row for row in table.rows if row[column] == case])
