"""What one step of ``shasweep bisect`` found: its sweep's report (a candidate commit against the good
one, one case, one gate) read as a bisect mark.

* the candidate's bench failed (a run the bench worker recorded ``failed``, ``timeout`` or
  ``audit_failed``) while the good side's did not: ``skip``;
* a good-side bench failed, the dispatch failed a run the worker never recorded (a vanished
  worker, a task error), or runs are missing or were cancelled: no mark, ``failure`` says why
  (the step must be resumed, or the bisect stops with exit 3);
* otherwise the gate verdict: FAIL ``bad``, PASS ``good``, INCONCLUSIVE ``undecided``; NO DATA (no ok
  run reported the gate's metric) on the candidate only ``skip`` (as a failed bench: e.g. a commit
  before the metric existed), on the good side no mark and a ``failure``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from orchestrator.analysis.report_model import Report, make_report
from orchestrator.analysis.verdicts import Verdict, format_interval
from orchestrator.store import query
from orchestrator.store.reuse import REUSED_COLUMN, measured_only

CANDIDATE, GOOD_SIDE = "cand", "good"  # the side labels of a bisect step's sweep
BENCH_FAILURES: frozenset[str] = frozenset({"failed", "timeout", "audit_failed"})
MARK_OF_VERDICT: dict[Verdict, str] = {Verdict.FAIL: "bad", Verdict.PASS: "good",
                                       Verdict.INCONCLUSIVE: "undecided"}


@dataclass(frozen=True)
class StepResult:
    """One step as the bisect record stores it (``asdict``)."""

    sweep_id: str
    runs: str  # ok runs, candidate vs good, e.g. "3 vs 3", or "3 vs 3 (3 reused)"
    reason: str
    mark: str | None = None  # good | bad | skip | undecided; None when ``failure`` is set
    verdict: str | None = None  # the gate verdict (None when skipped or failed)
    ratio: float | None = None
    low: float | None = None
    high: float | None = None
    interval: str = "-"  # e.g. "95% CI [0.891, 0.905]"
    failure: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def read_step(results_root: Path, sweep_id: str) -> StepResult:
    """The step whose sweep is ``sweep_id``, from its report and the runs its worker recorded."""
    runs = query.read_runs(results_root, query.Where(sweeps=[sweep_id]), [REUSED_COLUMN])
    reused = len(runs) - len(measured_only(runs))
    statuses = query.run_statuses(results_root, sweep_id)
    return step_result(make_report(results_root, sweep_id), statuses, reused)


def step_result(report: Report, recorded: Mapping[str, str | None], reused: int = 0) -> StepResult:
    """Read ``report`` (a step's sweep) as a bisect step; ``recorded``: run_key -> status of the
    runs the bench worker wrote; ``reused``: how many of them an earlier step measured. See the
    module docstring."""
    case = report.cases[0]
    runs = f"{report.counts[case, CANDIDATE][0]} vs {report.counts[case, GOOD_SIDE][0]}"
    runs += f" ({reused} reused)" if reused else ""
    failures = report.failures
    broken = failures[failures["status"].isin(BENCH_FAILURES) & failures["run_key"].isin(list(recorded))]
    good_broken = broken[broken["side"] == GOOD_SIDE]
    base = {"sweep_id": report.sweep_id, "runs": runs}
    if len(good_broken):
        first = good_broken.iloc[0]
        return StepResult(**base, reason="the good commit's run failed",
                          failure=f"a run of the good commit {first['status']}: {first['error']}")
    if len(broken):
        first = broken.iloc[0]
        return StepResult(**base, mark="skip", reason=f"bench {first['status']}: {first['error']}")
    if report.missing or len(failures):
        first = f": {failures.iloc[0]['status']}: {failures.iloc[0]['error']}" if len(failures) else ""
        undone = report.missing + len(failures)
        return StepResult(**base, reason="runs not done",
                          failure=f"{undone} runs of the step were not completed{first}")
    gate = report.gates[0]
    if gate.verdict == Verdict.NO_DATA:
        if GOOD_SIDE in gate.empty_sides:
            return StepResult(**base, reason="the good commit reported no data",
                              failure=f"the good commit's runs: {gate.reason}")
        return StepResult(**base, mark="skip", reason=f"no data: {gate.reason}")
    comparison = gate.comparison
    has = comparison.has_interval
    return StepResult(**base, mark=MARK_OF_VERDICT[gate.verdict], verdict=gate.verdict,
                      ratio=_finite(comparison.ratio), low=comparison.low if has else None,
                      high=comparison.high if has else None, interval=format_interval(comparison),
                      reason=gate.reason)


def _finite(value: float) -> float | None:
    return value if value == value else None  # NaN -> None (JSON-safe)
