"""``shasweep report --format bmf``: the report as Bencher Metric Format JSON, for ``bencher run
--adapter json --file``.

One benchmark per case (its name as the sweep spells it), one measure per metric: ``value`` is the
side's median of its runs' values, ``lower_value`` and ``upper_value`` their minimum and maximum; and
per non-baseline side's metric a ``<metric>-ratio`` measure: the ratio of medians to the baseline with
its interval at 95 % as the bounds. The side is the first non-baseline side unless one is named.
Metrics with no ok run are left out (BMF has no null).
"""

from __future__ import annotations

import math
from typing import Any

from orchestrator.analysis.report_model import MetricRow, Report
from orchestrator.errors import InvalidInputError

MAX_BENCHMARK_NAME = 1024  # Bencher's limits on a benchmark's and a measure's name
MAX_MEASURE_NAME = 64
RATIO_SUFFIX = "-ratio"


def bmf_side(report: Report, side: str | None) -> str:
    """The side whose numbers are sent: ``side``, else the first non-baseline side (the baseline
    in a one-side sweep); exit 2 naming an unknown one."""
    if side is None:
        return next((s for s in report.sides if s != report.baseline), report.baseline)
    if side not in report.sides:
        raise InvalidInputError(f"sweep {report.sweep_id} has no side {side!r}; its sides: "
                                f"{', '.join(report.sides)}", "--side")
    return side


def bmf_document(report: Report, side: str | None = None) -> dict[str, dict[str, dict[str, float]]]:
    """``{case: {measure: {value, lower_value, upper_value}}}`` of ``side`` (``bmf_side``)."""
    chosen = bmf_side(report, side)
    document: dict[str, dict[str, dict[str, float]]] = {}
    for row in report.rows:
        if row.side != chosen:
            continue
        if len(row.case) > MAX_BENCHMARK_NAME:
            raise InvalidInputError(f"case {row.case[:60]!r}... is longer than Bencher's "
                                    f"{MAX_BENCHMARK_NAME}-character benchmark names")
        document.setdefault(row.case, {}).update(_measures(row))
    return {case: measures for case, measures in document.items() if measures}


def _measures(row: MetricRow) -> dict[str, dict[str, float]]:
    measures: dict[str, dict[str, float]] = {}
    s = row.summary
    if s.n and math.isfinite(s.median):
        measures[_measure_name(row.metric)] = _metric(s.median, s.min, s.max)
    c = row.comparison
    if c is not None and math.isfinite(c.ratio):
        bounds = (c.low, c.high) if c.has_interval else (math.nan, math.nan)
        measures[_measure_name(row.metric + RATIO_SUFFIX)] = _metric(c.ratio, *bounds)
    return measures


def _metric(value: float, lower: float, upper: float) -> dict[str, Any]:
    metric = {"value": value}
    if math.isfinite(lower) and math.isfinite(upper):
        metric |= {"lower_value": lower, "upper_value": upper}
    return metric


def _measure_name(name: str) -> str:
    if len(name) > MAX_MEASURE_NAME:
        raise InvalidInputError(f"metric {name!r} is longer than Bencher's {MAX_MEASURE_NAME}-character "
                                "measure names")
    return name
