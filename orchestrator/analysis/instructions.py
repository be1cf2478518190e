"""Instruction counts beside wall time (docs/design.md, "Instruction counts").

A count compares only with counts taken under the same fingerprint: the valgrind version, the CPU
model and the interpreter's build (``FINGERPRINT_COLUMNS``); ``fingerprint_problem`` says when the
runs of a report or comparison hold counts of more than one. ``disagreements`` lists the cases whose
count and time tell different stories: the time's interval excludes no change while the counts moved
beyond their noise floor, or the time moved beyond its interval while the counts stayed flat.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from orchestrator.analysis.stats import Comparison
from orchestrator.capabilities import INSTRUCTIONS_METRIC, TIME_METRIC

FINGERPRINT_COLUMNS: tuple[str, ...] = ("host_valgrind", "host_cpu_model", "host_interpreter")
# How far a count moves without a change of its own work: between processes and rounds of one commit
# 1e-6 (PYTHONHASHSEED fixed), but code added elsewhere (a function wrapped in the same module) moved
# another benchmark's count by 0.14 %: the allocator's state at the measured calls differs. A count
# more than 0.5 % from its baseline's has moved (benchmarks/instructions.py).
COUNT_FLOOR = 0.005


def fingerprint_problem(runs: pd.DataFrame) -> str | None:
    """Why the ``instructions`` of ``runs`` cannot be compared (counted under more than one
    fingerprint), or None."""
    if INSTRUCTIONS_METRIC not in runs:
        return None
    counted = runs[pd.to_numeric(runs[INSTRUCTIONS_METRIC], errors="coerce").notna()]
    columns = pd.DataFrame({c: counted[c] if c in counted else None for c in FINGERPRINT_COLUMNS},
                           index=counted.index, dtype=object)
    prints = sorted({tuple("unknown" if pd.isna(v) else str(v) for v in row)
                     for row in columns.itertuples(index=False)})
    if len(prints) <= 1:
        return None
    shown = "; ".join(" | ".join(p) for p in prints[:3])
    return (f"instruction counts taken under different fingerprints cannot be compared (valgrind "
            f"version | CPU model | interpreter build): {shown}")


@dataclass(frozen=True)
class Disagreement:
    """A (case, side) whose time and count tell different stories."""

    case: str
    side: str
    time_metric: str
    time: Comparison
    count_ratio: float

    @property
    def says(self) -> str:
        interval = f"{self.time.ratio:.3f} [{self.time.low:.3f}, {self.time.high:.3f}]"
        if _time_moved(self.time):
            return (f"{self.time_metric} moved ({interval}) while the instructions stayed flat "
                    f"({self.count_ratio:.4f}): not a change of the work done (memory, cache, the host)")
        return (f"the instructions moved ({self.count_ratio:.4f}) while {self.time_metric} did not "
                f"({interval}): a change of work the timing cannot see (yet)")


def disagreements(rows: list, baseline: str) -> list[Disagreement]:
    """The (case, side) pairs of the report's ``rows`` (``report_model.MetricRow``) with both a count
    and a time whose verdicts differ."""
    by_key = {(r.case, r.side, r.metric): r for r in rows if r.side != baseline and r.comparison is not None}
    found = []
    for (case, side, metric), row in by_key.items():
        if metric != INSTRUCTIONS_METRIC or not math.isfinite(row.ratio):
            continue
        time_metric = TIME_METRIC if (case, side, TIME_METRIC) in by_key else "throughput"
        time_row = by_key.get((case, side, time_metric))
        if time_row is None or not time_row.comparison.has_interval:
            continue
        if _time_moved(time_row.comparison) != (abs(row.ratio - 1.0) > COUNT_FLOOR):
            found.append(Disagreement(case, side, time_metric, time_row.comparison, row.ratio))
    return found


def _time_moved(time: Comparison) -> bool:
    return time.low > 1.0 or time.high < 1.0
