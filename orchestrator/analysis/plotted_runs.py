"""What the HTML report of a sweep plots besides its report model: every run of the sweep (every
column, audited, the disturbed ones marked) and the per-step timings of the timeline's phase."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from orchestrator.analysis.legacy_audit import apply_audit
from orchestrator.analysis.report_model import Report
from orchestrator.store import query

# The per-step timeline shows the first of these a sweep's steps report.
TIMELINE_PHASES: tuple[str, ...] = ("collector_step_ms", "env_step_ms", "physics_ms")
PLOTTED_STEP_COLUMNS: list[str] = ["run_key", "step", "warmup", "phase", "ms"]


@dataclass(frozen=True)
class PlottedRuns:
    """A sweep's runs (audited, with ``disturbed`` where the report lists disturbed runs) and steps."""

    runs: pd.DataFrame
    steps: pd.DataFrame


def load_plotted_runs(results_root: Path, report: Report) -> PlottedRuns:
    """The runs and the timeline's steps of ``report``'s sweep."""
    runs = query.read_runs(results_root, query.Where(sweeps=[report.sweep_id]))
    return PlottedRuns(mark_disturbed(apply_audit(runs, report.record), report),
                       load_steps(results_root, report.sweep_id))


def load_steps(results_root: Path, sweep_id: str, phases: tuple[str, ...] = TIMELINE_PHASES) -> pd.DataFrame:
    """The sweep's per-step timings of ``phases`` only; when it timed none of them (a bench of another
    repository), of the first phase its steps report. Empty when it wrote none."""
    sweep = query.Where(sweeps=[sweep_id])
    steps = query.read_steps(results_root, sweep, phases, PLOTTED_STEP_COLUMNS)
    if steps.empty:
        present = query.read_steps(results_root, sweep, columns=["phase"])["phase"].tolist()[:1]
        if present:
            steps = query.read_steps(results_root, sweep, present, PLOTTED_STEP_COLUMNS)
    return steps


def mark_disturbed(runs: pd.DataFrame, report: Report) -> pd.DataFrame:
    """``runs`` with a ``disturbed`` column when the report lists disturbed runs (``report.disturbed``:
    a frame with their ``run_key``, where the report model computes it)."""
    flagged = getattr(report, "disturbed", None)
    if not isinstance(flagged, pd.DataFrame) or "run_key" not in flagged or not len(runs):
        return runs
    return runs.assign(disturbed=runs["run_key"].isin(flagged["run_key"]))
