"""``try``: run a sweep's bench once, at one side's SHA, on this host, and say what shasweep read.

Sizing a bench (its command, its JSON paths, its exit codes) by whole sweeps costs a cluster start and
a results entry per mistake. A trial takes the worker's own path (``worker.bench_task.measure_run``:
the host lock, the SHA's worktree, the bench environment, the launch helper, the protocol's reader
and the run audit) without Dask and without the store: nothing is written to the results root. The
bench's logs go to ``$SHASWEEP_HOME/logs/try-<sweep id>/<run key>/`` like any run's. A lockstep
sweep's run is tried as a lockstep round of its side alone (``worker.round_task.measure_round``: the
control channel, the warm-up block, the sweep's blocks), whose blocks the result carries.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from orchestrator.capabilities import SUITE_CASE, describe
from orchestrator.contract import PlannedRun, RunResult
from orchestrator.errors import EXIT_INVALID, EXIT_OK, EXIT_RUN_FAILED, InvalidInputError
from orchestrator.session.sweep import SweepPlan
from orchestrator.worker.bench_task import measure_run, run_log_dir
from orchestrator.worker.round_task import measure_round
from orchestrator.worker.run_audit import audit_result

TRIAL_PREFIX = "try-"  # of a trial's sweep id: its logs and its note on the host lock say it is a trial


@dataclass(frozen=True)
class TrialOptions:
    """Which run of the sweep to try: ``side`` (default: the baseline) and ``case`` (default: the
    first)."""

    side: str | None = None
    case: str | None = None


@dataclass(frozen=True)
class Reading:
    """What was read of one case of the run (a suite run gives one per benchmark it selected)."""

    case: str
    result: RunResult  # as the worker audited it
    values: dict[str, float | None]  # every metric the case reported, then each needed one (None: not)
    needed: tuple[str, ...]

    @property
    def missing(self) -> list[str]:
        """Needed metrics the case did not report."""
        return [name for name in self.needed if self.values.get(name) is None]

    @property
    def ok(self) -> bool:
        return self.result.status == "ok" and not self.missing


@dataclass(frozen=True)
class TrialResult:
    """The run as the worker read it, and per case what the sweep's gates and report need of it."""

    run: PlannedRun
    result: RunResult  # the bench run's own (for a suite run: the whole output's)
    log_dir: Path
    readings: tuple[Reading, ...]

    @property
    def exit_code(self) -> int:
        """0 when every case is ok and reported every needed metric; 2 when the run failed because of its
        input or the host's set-up (``bad_input``, e.g. a planted host lock file); else 3."""
        if self.result.bad_input is not None:
            return EXIT_INVALID
        return EXIT_OK if self.readings and all(r.ok for r in self.readings) else EXIT_RUN_FAILED

    @property
    def throughput_unit(self) -> str | None:
        return describe(self.run.protocol, self.run.json_mapping).throughput_unit


def try_bench(plan: SweepPlan, options: TrialOptions | None = None,
              on_wait: Callable[[str], None] | None = None) -> TrialResult:
    """Run ``plan``'s first run of ``options.side`` and ``options.case`` once on this host, read and
    audit it; ``InvalidInputError`` names a side or case the sweep does not have (for a suite: a case
    its output does not give). ``on_wait(text)`` is called once when the host lock is taken
    (``waiting for host H: held by ...``)."""
    options = options or TrialOptions()
    spec = plan.spec
    side = spec.baseline if options.side is None else options.side
    if side not in spec.sides:
        raise InvalidInputError(f"the sweep has no side {side!r} (its sides: {', '.join(spec.sides)})",
                                "--side")
    runs = [r for r in plan.runs if r.side == side]
    suite = runs[0].case == SUITE_CASE
    case = options.case if options.case is not None or suite else spec.cases[0]
    if not suite and case not in spec.cases:
        raise InvalidInputError(f"the sweep has no case {case!r} (its cases: {', '.join(spec.cases)})",
                                "--case")
    run = runs[0] if suite else next(r for r in runs if r.case == case)
    run = replace(run, sweep_id=TRIAL_PREFIX + run.sweep_id)
    log_dir = run_log_dir(run)

    def publish(event: dict) -> None:
        if event.get("event") == "waiting" and event.get("holder") and on_wait is not None:
            on_wait(f"waiting for host {event.get('host_id')}: {event['holder']}")

    if run.lockstep is not None:
        result = measure_round([run], {run.run_key: log_dir}, publish=publish)[run.run_key]
    else:
        result = measure_run(run, log_dir, publish=publish)
    needed = tuple(dict.fromkeys([*(spec.metrics or []), *(g.metric for g in spec.gates)]))
    cases = result.cases if result.cases is not None else [(run, result)]
    readings = tuple(Reading(case_run.case, audited, reported_values(audited.summary, needed), needed)
                     for case_run, case_result in cases
                     for audited in [audit_result(case_run, case_result)])
    if suite and case is not None:
        readings = _only(readings, case)
    return TrialResult(run=run, result=result, log_dir=log_dir, readings=readings)


def _only(readings: tuple[Reading, ...], case: str) -> tuple[Reading, ...]:
    """The readings of ``case``; ``InvalidInputError`` naming the cases the suite's output gave."""
    mine = tuple(r for r in readings if r.case == case)
    if not mine:
        found = ", ".join(r.case for r in readings) or "none"
        raise InvalidInputError(f"the suite's output has no case {case!r} (its cases: {found})", "--case")
    return mine


def reported_values(summary: dict | None, needed: tuple[str, ...]) -> dict[str, float | None]:
    """Throughput, each phase mean and each metric of the run's summary, then the ``needed`` names it
    lacks (None)."""
    summary = summary or {}
    values: dict[str, float | None] = {"throughput": _number(summary.get("throughput"))}
    for group in ("phase_means_ms", "metrics"):
        reported = summary.get(group)
        if isinstance(reported, dict):
            values |= {str(name): _number(value) for name, value in reported.items()}
    return values | {name: None for name in needed if name not in values}


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
