"""What an HTML page draws when a sweep has more than it can show (issue 37 item 6, issue 41 item 6):
a page is sized to what it shows, not to the sweep. Beyond ``PLOTTED_CASES`` cases only those that
matter most get their plots (a gate that did not pass first, then the largest change); beyond
``FOREST_ROWS`` gates of a metric the forest plot draws those furthest from passing; a run's timeline
beyond ``TIMELINE_POINTS`` steps is the median of each bin of consecutive steps. Every figure left out
is in the page's tables and the Markdown report."""

from __future__ import annotations

import math

import pandas as pd

from orchestrator.analysis.decided import SEVERITY
from orchestrator.analysis.report_model import Report
from orchestrator.analysis.verdicts import GateVerdict

PLOTTED_CASES = 12
FOREST_ROWS = 40
TIMELINE_POINTS = 200  # per run


def plotted_cases(report: Report, limit: int = PLOTTED_CASES) -> list[str]:
    """The cases whose plots the page draws: all of them up to ``limit``; else the ``limit`` that
    matter most, in the report's order."""
    if len(report.cases) <= limit:
        return list(report.cases)
    rank = {case: (len(SEVERITY), 0.0) for case in report.cases}
    for gate in report.gates:
        rank[gate.case] = min(rank[gate.case], (_severity(gate), -_change(gate.ratio)))
    for figure in report.decided:
        severity, change = rank[figure.case]
        rank[figure.case] = (severity, min(change, -_change(figure.ratio)))
    chosen = set(sorted(report.cases, key=lambda case: rank[case])[:limit])
    return [case for case in report.cases if case in chosen]


def forest_rows(verdicts: list[GateVerdict], limit: int = FOREST_ROWS) -> list[GateVerdict]:
    """The verdicts a forest plot draws: all up to ``limit``, else those furthest from passing (the
    most severe verdict, then the largest change), in their order."""
    if len(verdicts) <= limit:
        return verdicts
    ranked = sorted(range(len(verdicts)), key=lambda i: (_severity(verdicts[i]), -_change(verdicts[i].ratio)))
    return [verdicts[i] for i in sorted(ranked[:limit])]


def summarised_steps(steps: pd.DataFrame, points: int = TIMELINE_POINTS) -> tuple[pd.DataFrame, int]:
    """``steps`` (one phase, long format) with each run's steps beyond ``points`` binned: per bin of
    ``width`` consecutive steps its median ``ms`` at the bin's middle step (warm-up: any step of it
    was); the frame and ``width`` (1: as they were)."""
    longest = int(steps.groupby("run_key")["step"].count().max()) if len(steps) else 0
    width = max(1, math.ceil(longest / points))
    if width == 1:
        return steps, 1
    binned = steps.assign(bin=steps["step"] // width)
    summary = binned.groupby(["run_key", "bin"], sort=True).agg(ms=("ms", "median"), warmup=("warmup", "any"),
                                                                step=("step", "median"))
    return summary.reset_index().drop(columns="bin"), width


def _severity(gate: GateVerdict) -> int:
    return SEVERITY.get(gate.verdict, len(SEVERITY))


def _change(ratio: float) -> float:
    return abs(math.log(ratio)) if math.isfinite(ratio) and ratio > 0 else 0.0
