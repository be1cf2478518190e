"""``try``: run a sweep's bench once, at one side's SHA, on this host, and say what shasweep read.

Sizing a bench (its command, its JSON paths, its exit codes) by whole sweeps costs a cluster start and
a results entry per mistake. A trial takes the worker's own path (``worker.bench_task.measure_run``:
the host lock, the SHA's worktree, the bench environment, the launch helper, the protocol's reader
and the run audit) without Dask and without the store: nothing is written to the results root. The
bench's logs go to ``$SHASWEEP_HOME/logs/try-<sweep id>/<run key>/`` like any run's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from orchestrator.capabilities import describe
from orchestrator.contract import PlannedRun
from orchestrator.errors import EXIT_OK, EXIT_RUN_FAILED, InvalidInputError
from orchestrator.session.sweep import SweepPlan
from orchestrator.store.parquet import RunResult
from orchestrator.worker.bench_task import measure_run, run_log_dir

TRIAL_PREFIX = "try-"  # of a trial's sweep id: its logs and its note on the host lock say it is a trial


@dataclass(frozen=True)
class TrialOptions:
    """Which run of the sweep to try: ``side`` (default: the baseline) and ``case`` (default: the
    first)."""

    side: str | None = None
    case: str | None = None


@dataclass(frozen=True)
class TrialResult:
    """The run as the worker read it, and the metrics the sweep's gates and report need from it."""

    run: PlannedRun
    result: RunResult
    log_dir: Path
    needed: tuple[str, ...]  # the sweep's metrics (if it lists them) and every gate's metric
    values: dict[str, float | None]  # every metric the run reported, then each needed one (None: not)

    @property
    def missing(self) -> list[str]:
        """Needed metrics the run did not report."""
        return [name for name in self.needed if self.values.get(name) is None]

    @property
    def exit_code(self) -> int:
        """0 when the run is ok and reported every needed metric, else 3."""
        return EXIT_OK if self.result.status == "ok" and not self.missing else EXIT_RUN_FAILED

    @property
    def throughput_unit(self) -> str | None:
        return describe(self.run.protocol, self.run.json_mapping).throughput_unit


def try_bench(plan: SweepPlan, options: TrialOptions | None = None,
              on_wait: Callable[[str], None] | None = None) -> TrialResult:
    """Run ``plan``'s first run of ``options.side`` and ``options.case`` once on this host and read it;
    ``InvalidInputError`` names a side or case the sweep does not have. ``on_wait(text)`` is called
    once when the host lock is taken (``waiting for host H: held by ...``)."""
    options = options or TrialOptions()
    spec = plan.spec
    side = spec.baseline if options.side is None else options.side
    case = spec.cases[0] if options.case is None else options.case
    if side not in spec.sides:
        raise InvalidInputError(f"the sweep has no side {side!r} (its sides: {', '.join(spec.sides)})",
                                "--side")
    if case not in spec.cases:
        raise InvalidInputError(f"the sweep has no case {case!r} (its cases: {', '.join(spec.cases)})",
                                "--case")
    run = next(r for r in plan.runs if r.side == side and r.case == case)
    run = replace(run, sweep_id=TRIAL_PREFIX + run.sweep_id)
    log_dir = run_log_dir(run)

    def publish(event: dict) -> None:
        if event.get("event") == "waiting" and event.get("holder") and on_wait is not None:
            on_wait(f"waiting for host {event.get('host_id')}: {event['holder']}")

    result = measure_run(run, log_dir, publish=publish)
    needed = tuple(dict.fromkeys([*(spec.metrics or []), *(g.metric for g in spec.gates)]))
    return TrialResult(run=run, result=result, log_dir=log_dir, needed=needed,
                       values=reported_values(result.summary, needed))


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
