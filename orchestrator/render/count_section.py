"""The report's section on instruction counts beside wall time (docs/design.md, "Instruction
counts"): the cases whose count and time disagree, each saying which moved."""

from __future__ import annotations

from orchestrator.analysis.report_model import Report
from orchestrator.capabilities import INSTRUCTIONS_METRIC

COUNT_NOTE = ("Instructions were counted under valgrind, outside the timed processes: a count moves only "
              "with the work done, time also with the host. Where one moved and the other did not, the "
              "case is listed.")


def has_counts(report: Report) -> bool:
    """Whether the report holds instruction counts."""
    return INSTRUCTIONS_METRIC in report.metrics


def disagreement_lines(report: Report) -> list[str]:
    """One line per case whose count and time disagree; a line saying they all agree otherwise."""
    if not report.count_disagreements:
        return ["every case's instruction count and time agree"]
    return [f"{d.case} ({d.side}): {d.says}" for d in report.count_disagreements]
