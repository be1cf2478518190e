"""What a suite's bench process measured of itself, per suite run (docs/design.md, "Suites").

One process runs every benchmark of a side's round, so its CPU time and peak RSS (``PROCESS_METRICS``)
are figures of the whole suite run, written on each of its cases' rows alike. They are no case's
own: shown per case, a side that runs more benchmarks reads as a slower case (a user-CPU ratio of
1.167 on every case of a sweep whose candidate had more benchmarks). So the report shows them once
per side, one value per suite run, and compares two sides' only when both ran the same benchmarks.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import pandas as pd

from orchestrator.analysis import stats
from orchestrator.analysis.suites import OneSided
from orchestrator.analysis.verdicts import Comparer
from orchestrator.capabilities import SUITE_CASE
from orchestrator.spec.protocol_checks import is_suite
from orchestrator.spec.schema import SweepSpec

# the bench process tree's CPU seconds (wait4) and peak RSS: per process, whatever it ran
PROCESS_METRICS: tuple[str, ...] = ("bench_user_s", "bench_sys_s", "bench_max_rss_mib")


@dataclass(frozen=True)
class ProcessFigure:
    """One per-process metric of one side over its suite runs (one value per bench process).

    ``comparison``: against the baseline's suite runs (None for the baseline, and where the two
    sides ran different benchmarks: ``not_compared`` says which)."""

    side: str
    metric: str
    summary: stats.Summary
    runs: int  # suite runs with a value
    comparison: stats.Comparison | None = None
    not_compared: str | None = None


def suite_processes(spec: SweepSpec, runs: pd.DataFrame, one_sided: dict[str, OneSided]
                    ) -> list[ProcessFigure]:
    """The per-process figures of a suite sweep's ok case rows, per side and metric, one value per
    suite run; empty for any other sweep or where no run recorded them."""
    metrics = [m for m in PROCESS_METRICS if m in runs and runs[m].notna().any()]
    if not is_suite(spec) or not metrics or "suite_run_key" not in runs:
        return []
    ok = runs[(runs["status"] == "ok") & (runs["case"] != SUITE_CASE)]
    per_run = (ok.assign(suite_run_key=ok["suite_run_key"].fillna(ok["run_key"]))
               .drop_duplicates("suite_run_key")[["side", "repeat", *metrics]].assign(case=SUITE_CASE))
    comparer = Comparer(per_run, spec.baseline, spec.order.value)
    figures = []
    for metric in metrics:
        for side in spec.sides:
            values = per_run.loc[per_run["side"] == side, metric]
            figure = ProcessFigure(side, metric, stats.summarize(values), int(values.notna().sum()))
            if side != spec.baseline and one_sided.get(side):
                figure = replace(figure, not_compared=_different(one_sided[side]))
            elif side != spec.baseline:
                figure = replace(figure, comparison=comparer.compare(SUITE_CASE, side, metric))
            figures.append(figure)
    return figures


def _different(cases: OneSided) -> str:
    """``the sides ran different benchmarks (2 added, 1 removed)``."""
    counts = [f"{len(cases.added)} added"] * bool(cases.added) + [f"{len(cases.removed)} removed"] * bool(
        cases.removed)
    return f"the sides ran different benchmarks ({', '.join(counts)})"
