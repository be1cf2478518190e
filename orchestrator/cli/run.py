"""``shasweep plan`` and ``shasweep run`` (new sweeps and ``--resume``): validate, record, dispatch,
report."""


from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from orchestrator.cli.results import print_report
from orchestrator.contract import PlannedRun
from orchestrator.errors import EXIT_RUN_FAILED, InvalidInputError
from orchestrator.plan import record as record_updates
from orchestrator.plan.expand import ResolvedSweep, build_plan, resolve_sweep, results_root_for
from orchestrator.spec.load import load_spec
from orchestrator.store import records as sweep_record

if TYPE_CHECKING:
    from orchestrator.dispatch.dispatcher import SweepOutcome



def add_sweep_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("sweep", type=Path, help="sweep YAML file")
    parser.add_argument("overrides", nargs="*", metavar="KEY=VALUE",
                        help="dotlist overrides, e.g. params.num_envs=64 repeats=1 sides.b.ref=main")


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("sweep", nargs="?", type=Path, help="sweep YAML file")
    source.add_argument("--resume", metavar="SWEEP_ID|latest",
                        help="run again the runs of a recorded sweep that are not ok (same SHAs, run keys)")
    parser.add_argument("overrides", nargs="*", metavar="KEY=VALUE",
                        help="dotlist overrides, e.g. params.num_envs=64 repeats=1 sides.b.ref=main")
    parser.add_argument("--results", metavar="DIR",
                        help="with --resume: the results root holding the sweep (default: 'results' in the "
                             "git repo of the current directory); a new sweep's is its results key")
    parser.add_argument("--scheduler", metavar="ADDR",
                        help="tcp://HOST:PORT of a Dask scheduler (default: an embedded LocalCluster)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")


def cmd_plan(args: argparse.Namespace) -> int:
    """Validate a sweep and print its plan without running anything."""
    resolved = _resolve(args)
    sweep_id = sweep_record.base_sweep_id(resolved.spec.name, datetime.now(UTC))
    print(format_plan(resolved, build_plan(resolved, sweep_id)))
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    """Validate, record, dispatch, then report; the exit code follows the report."""
    if args.resume is not None:
        return _resume(args)
    if args.results is not None:
        raise InvalidInputError("--results goes with --resume; a new sweep writes to its results key "
                                "(override it with results=DIR)")
    resolved = _resolve(args)
    root = resolved.results_root
    created = datetime.now(UTC)
    sweep_id = sweep_record.reserve_sweep_id(root, resolved.spec.name, created)
    runs = build_plan(resolved, sweep_id)
    record = record_updates.new_record(resolved, sweep_id, created, len(runs))
    sweep_record.write_record(root, sweep_id, record)
    print(f"sweep {sweep_id}: {len(runs)} runs, results under {root}", flush=True)
    try:
        with sweep_record.sweep_lock(root, sweep_id):
            _dispatch(args, resolved, record, runs)
    except InvalidInputError:  # found before anything was dispatched: leave nothing behind
        sweep_record.discard(root, sweep_id)
        raise
    return _report_run(root, sweep_id)


def _resume(args: argparse.Namespace) -> int:
    """``run --resume``: dispatch again the recorded sweep's runs that are not ok, then report it whole."""
    from orchestrator.plan import resume

    root = results_root_for(args.results or "results", Path.cwd())
    sweep_id = sweep_record.resolve_sweep_id(root, args.resume)
    plan = resume.plan_resume(root, sweep_id)  # checks everything, writes nothing
    with sweep_record.sweep_lock(root, sweep_id):
        plan = plan.refreshed()  # what is ok now that no other client runs the sweep
        todo = plan.todo
        print(f"sweep {sweep_id}: resuming {len(todo)} of {len(plan.runs)} runs (the others are ok), "
              f"results under {root}", flush=True)
        if todo:
            record = record_updates.resumed(plan.record, root, datetime.now(UTC))
            _dispatch(args, plan.resolved, record, todo,
                      lambda outcome: replace(outcome, runs=plan.merged_outcomes(outcome.runs)))
    return _report_run(root, sweep_id)


def _dispatch(args: argparse.Namespace, resolved: ResolvedSweep, record: dict, runs: list[PlannedRun],
              complete: Callable[[SweepOutcome], SweepOutcome] | None = None) -> None:
    """Dispatch ``runs`` and store what happened (``complete`` adds runs not dispatched) in the record."""
    from orchestrator.dispatch.dispatcher import run_sweep  # imports Dask: only when actually running

    root, sweep_id = resolved.results_root, record["sweep_id"]

    def connected(scheduler: str, dashboard_url: str | None) -> None:
        """Record where the sweep runs, so `shasweep status` and `shasweep cancel` find its scheduler."""
        record.update(scheduler=scheduler, dashboard_url=dashboard_url)
        sweep_record.write_record(root, sweep_id, record)

    try:
        outcome = run_sweep(runs, scheduler=args.scheduler, continue_on_error=resolved.spec.continue_on_error,
                            show_progress=not args.no_progress, on_connect=connected,
                            hosts=resolved.spec.hosts)
    except InvalidInputError:  # found before dispatching: the caller decides what the record keeps
        raise
    except BaseException as exc:
        reason = f"{type(exc).__name__}: {exc}"
        sweep_record.write_record(root, sweep_id, record_updates.aborted(record, reason))
        raise
    done = complete(outcome) if complete else outcome
    sweep_record.write_record(root, sweep_id, done.finished_record(record))


def _report_run(root: Path, sweep_id: str) -> int:
    """The report at the end of ``run``, with how to resume when a run is not ok."""
    code = print_report(root, sweep_id, html=True)
    if code == EXIT_RUN_FAILED:
        print(f"to run again the runs that are not ok: shasweep run --resume {sweep_id} --results {root}")
    return code


def format_plan(resolved: ResolvedSweep, runs: list[PlannedRun]) -> str:
    """The sides with their SHAs, then one line per run in execution order."""
    spec = resolved.spec
    lines = [f"sweep {spec.name}: {len(runs)} runs ({len(spec.cases)} cases x {len(spec.sides)} sides x "
             f"{spec.repeats} repeats, order {spec.order.value}), repo {resolved.repo}",
             f"results: {resolved.results_root}"]
    for label, side in spec.sides.items():
        settings = resolved.settings[label]
        marker = " (baseline)" if label == spec.baseline else ""
        lines.append(f"side {label}{marker}: {side.ref} = {resolved.shas[label]}, "
                     f"variant {settings.variant}, num_envs {settings.params.num_envs}")
    row = "{:>4}  {:<12} {:<40} {:>3}  {:<12}  {}"
    lines.append(row.format("#", "side", "case", "rep", "sha", "run_key"))
    lines += [row.format(r.order, r.side, r.case, r.repeat, r.sha[:12], r.run_key) for r in runs]
    return "\n".join(lines)


def _resolve(args: argparse.Namespace) -> ResolvedSweep:
    return resolve_sweep(load_spec(args.sweep, args.overrides), Path.cwd())
