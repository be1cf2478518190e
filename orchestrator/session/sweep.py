"""Plan, run and resume one sweep: validate, record, dispatch (the adaptive rounds included), record
how it ended. The report is read from the results afterwards (``SweepRun.report``)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from omegaconf import OmegaConf

from orchestrator.contract import PlannedRun
from orchestrator.errors import InvalidInputError
from orchestrator.plan import lifecycle
from orchestrator.plan.expand import ResolvedSweep, build_plan, resolve_sweep
from orchestrator.plan.integrity import with_digest
from orchestrator.plan.roots import check_writable
from orchestrator.printable import printable
from orchestrator.session.options import RunOptions
from orchestrator.session.recorded import SweepRun, locate_results
from orchestrator.spec.identical_sides import aa_warnings
from orchestrator.spec.load import load_spec, spec_from_config
from orchestrator.spec.protocol_checks import protocol_info
from orchestrator.spec.record import SweepRecord, spec_to_json
from orchestrator.spec.schema import Order, SweepSpec
from orchestrator.store import records

if TYPE_CHECKING:
    from orchestrator.dispatch.dispatcher import SweepOutcome


@dataclass(frozen=True)
class SweepPlan:
    """A validated sweep pinned to its repository and full SHAs, and its runs as planned now (under a
    provisional sweep id: running it reserves the real one, and the run keys follow it)."""

    resolved: ResolvedSweep
    runs: list[PlannedRun]

    @classmethod
    def of(cls, resolved: ResolvedSweep) -> SweepPlan:
        """The plan of ``resolved`` as it would run now."""
        provisional = records.base_sweep_id(resolved.spec.name, datetime.now(UTC))
        return cls(resolved=resolved, runs=build_plan(resolved, provisional))

    @property
    def spec(self) -> SweepSpec:
        return self.resolved.spec

    @property
    def warnings(self) -> list[str]:
        """What to know before running it: sides that compare a commit with itself (``aa``)."""
        return aa_warnings(lifecycle.record_sides(self.resolved), self.spec.aa)


def plan_sweep(spec: str | Path | SweepSpec, overrides: Sequence[str] = (), *, cwd: Path | None = None
               ) -> SweepPlan:
    """Load and validate the sweep (a YAML path, or a spec) with ``overrides`` (``KEY=VALUE``), and
    resolve its repository, refs and results root as a command run in ``cwd`` would; writes nothing."""
    cwd = cwd or Path.cwd()
    if isinstance(spec, SweepSpec):
        loaded, sweep_dir = spec_from_config(OmegaConf.create(spec_to_json(spec)), list(overrides)), None
    else:
        loaded, sweep_dir = load_spec(spec, list(overrides)), Path(spec).resolve().parent
    return SweepPlan.of(resolve_sweep(loaded, cwd, sweep_dir))


def run_sweep(plan: SweepPlan, options: RunOptions | None = None) -> SweepRun:
    """Record and dispatch a new sweep of ``plan``, its adaptive rounds and re-runs included; the
    record says how it ended. Bad input raises ``InvalidInputError`` before anything is recorded, or,
    for a gate metric the bench's first ok run lacks (``dispatch.first_run``), once the stopped
    sweep is recorded."""
    options = options or RunOptions()
    options.security()  # the TLS options checked before anything is recorded
    for warning in plan.warnings:
        say(warning)
    resolved = plan.resolved
    root = resolved.results_root
    check_writable(root)
    created = datetime.now(UTC)
    sweep_id = records.reserve_sweep_id(root, resolved.spec.name, created)
    runs = build_plan(resolved, sweep_id)
    record = lifecycle.new_record(resolved, sweep_id, created, len(runs),
                                  records.next_sequence(records.sweeps_dir(root)))
    records.write_record(root, record)
    say(f"sweep {sweep_id}: {len(runs)} runs, results under {root}")
    try:
        with records.sweep_lock(root, sweep_id):
            problem = _dispatch(resolved, record, runs, options)
            _compact(root, sweep_id)
    except InvalidInputError:  # found before anything was dispatched: leave nothing behind
        records.discard(root, sweep_id)
        raise
    _raise_if(problem)
    check_suite_input(resolved.spec, root, sweep_id)
    check_lockstep_input(resolved.spec, root, sweep_id)
    return SweepRun(sweep_id, root)


def resume(sweep_id: str, results_root: str | Path = "results", options: RunOptions | None = None, *,
           cwd: Path | None = None) -> SweepRun:
    """Dispatch again the runs of recorded sweep ``sweep_id`` (or ``latest``) that are not ok, same
    SHAs and run keys, then the adaptive rounds it still needs. ``results_root``: relative to the git
    repository of ``cwd``."""
    from orchestrator.plan.resume import plan_resume
    from orchestrator.store.compact import compact_finished, release_for_rerun
    from orchestrator.store.query import with_suite_cases

    options = options or RunOptions()
    options.security()
    root = locate_results(results_root, cwd=cwd)
    sweep_id = records.resolve_sweep_id(root, sweep_id)
    plan = plan_resume(root, sweep_id)  # checks everything, writes nothing
    with records.sweep_lock(root, sweep_id):
        plan = plan.refreshed()  # what is ok now that no other client runs the sweep
        again = [key for key, status in plan.statuses.items() if status != "ok"]
        release_for_rerun(root, sweep_id, with_suite_cases(root, sweep_id, again))
        todo = plan.todo
        say(f"sweep {sweep_id}: resuming {len(todo)} of {len(plan.runs)} runs (the others are ok), "
            f"results under {root}")
        problem = None
        if todo or plan.resolved.spec.adaptive:
            record = lifecycle.resumed(plan.record, root, datetime.now(UTC))
            problem = _dispatch(plan.resolved, record, todo, options,
                                lambda outcome: replace(outcome, runs=plan.merged_outcomes(outcome.runs)),
                                plan.ok_keys)
        compact_finished(root, sweep_id)
    _raise_if(problem)
    check_suite_input(plan.resolved.spec, root, sweep_id)
    check_lockstep_input(plan.resolved.spec, root, sweep_id)
    return SweepRun(sweep_id, root)


def _compact(root: Path, sweep_id: str) -> None:
    """Merge the finished sweep's per-run files (``store.compact``: Parquet, imported only now)."""
    from orchestrator.store.compact import compact_finished

    compact_finished(root, sweep_id)


def _raise_if(problem: str | None) -> None:
    """A gate metric the bench does not report stopped the sweep: bad input (exit 2), raised once the
    record says so."""
    if problem is not None:
        raise InvalidInputError(problem)


def check_suite_input(spec: SweepSpec, results_root: Path, sweep_id: str) -> None:
    """``InvalidInputError`` (exit 2) for what a suite's runs showed to be wrong with the sweep: a
    ``cases`` entry no benchmark matches, a unit that is not a time, a gate's ``case`` that matches
    no case found (``analysis.suites.input_problem``). The record and the runs stay as they are."""
    from orchestrator.analysis.report_model import load_runs
    from orchestrator.analysis.suites import input_problem
    from orchestrator.spec.protocol_checks import is_suite

    if not is_suite(spec):
        return
    problem = input_problem(spec, load_runs(results_root, sweep_id, []))
    if problem is not None:
        key, why = problem
        raise InvalidInputError(f"sweep {sweep_id}: {why}", key)


def check_lockstep_input(spec: SweepSpec, results_root: Path, sweep_id: str) -> None:
    """``InvalidInputError`` (exit 2) when a lockstep round met a SHA whose bench has no control
    channel under ``lockstep.fallback: stop``; the record and the runs stay as they are."""
    from orchestrator.analysis.block_pairs import no_control_problem
    from orchestrator.analysis.report_model import load_runs

    if spec.order is not Order.lockstep:
        return
    why = no_control_problem(load_runs(results_root, sweep_id, []))
    if why is not None:
        raise InvalidInputError(f"sweep {sweep_id} stopped: {why} (with lockstep.fallback: interleaved such "
                                "a case runs interleaved instead)", "lockstep.fallback")


def noise_estimates(plan: SweepPlan, host: str) -> list[str]:
    """Per gate and case: the minimum detectable change the planned rounds give with the noise of
    earlier sweeps of the case on ``host``, with a warning where it exceeds the bound's distance from
    1.0 (``analysis.plan_power``)."""
    from orchestrator.analysis.plan_power import gate_lines

    return gate_lines(plan.resolved.results_root, plan.spec, host)


def lockstep_residency(plan: SweepPlan) -> str:
    """What ``plan`` says of a lockstep sweep: every side's bench process is resident at once, with each
    side's peak RSS in earlier runs where known (``analysis.block_pairs.residency_line``)."""
    from orchestrator.analysis.block_pairs import earlier_peak_rss, residency_line  # reads earlier runs

    resolved = plan.resolved
    shas = sorted(set(resolved.shas.values()))
    peaks = earlier_peak_rss(resolved.results_root, shas, list(plan.spec.cases))
    return residency_line(resolved.shas, peaks)


def _dispatch(resolved: ResolvedSweep, record: SweepRecord, runs: list[PlannedRun], options: RunOptions,
              complete: Callable[[SweepOutcome], SweepOutcome] | None = None,
              done: set[str] | None = None) -> str | None:
    """Dispatch ``runs`` and the adaptive rounds after them (skipping the ``done`` run keys) and store
    what happened (``complete`` adds runs not dispatched) in the record. Returns why a gate cannot be
    judged when the bench's first ok run lacks its metric (the sweep stopped), else None."""
    from orchestrator.dispatch.adaptive import run_until_decided  # imports Dask: only when actually running
    from orchestrator.dispatch.dispatcher import SweepOutcome
    from orchestrator.dispatch.first_run import FirstRunMetrics

    root = resolved.results_root
    unknown = protocol_info(resolved.spec).provides is None and resolved.spec.gates
    check = FirstRunMetrics(list(resolved.spec.gates)) if unknown and options.check_first_run else None
    runs = [replace(run, token=record.client_token) for run in runs]

    alongside = _start(options.while_connecting)

    def connected(scheduler: str, dashboard_url: str | None) -> None:
        """Record where the sweep runs, so `shasweep status` and `shasweep cancel` find its scheduler;
        then let ``while_connecting`` finish before any run is dispatched."""
        nonlocal record
        record = replace(record, scheduler=scheduler, dashboard_url=dashboard_url)
        records.write_record(root, record)
        if alongside is not None:
            alongside.join()

    try:
        outcome, adaptive = run_until_decided(
            resolved, record, runs, done=done, scheduler=options.scheduler,
            continue_on_error=resolved.spec.continue_on_error, show_progress=options.progress,
            on_connect=connected, security=options.security(), hosts=resolved.spec.hosts,
            reuse=options.reuse, check=check, deadline=options.deadline)
    except InvalidInputError:  # found before dispatching: the caller decides what the record keeps
        raise
    except BaseException as exc:
        records.write_record(root, lifecycle.aborted(record, f"{type(exc).__name__}: {exc}"))
        raise
    if adaptive is not None:
        record = replace(record, adaptive=adaptive)
    if outcome is None:  # nothing was left to run: the record still gets every run's outcome
        outcome = SweepOutcome(runs=[], host=record.host or {})
    finished = complete(outcome) if complete else outcome
    # the adaptive rounds may have changed planned_runs: the digest follows what shasweep wrote
    records.write_record(root, with_digest(finished.finished_record(record)))
    return check.problem if check is not None else None


def _start(work: Callable[[], None] | None) -> threading.Thread | None:
    """``work`` started in a daemon thread (None for no work)."""
    if work is None:
        return None
    thread = threading.Thread(target=work, name="shasweep-while-connecting", daemon=True)
    thread.start()
    return thread


def say(text: str) -> None:
    """One line, ``printable``: on a terminal wrapped to its width between phrases (``display.wrapped``:
    a path or a command stays whole); piped, as is."""
    from orchestrator.display import wrapped
    from orchestrator.render.console import terminal_console

    text, console = printable(text), terminal_console()
    if console.is_terminal:
        for line in wrapped(text, console.width):
            console.print(line, soft_wrap=True)
    else:
        print(text, flush=True)
