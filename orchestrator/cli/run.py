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
from orchestrator.cli.servers import add_tls_arguments, client_security
from orchestrator.contract import PlannedRun
from orchestrator.errors import EXIT_RUN_FAILED, InvalidInputError
from orchestrator.plan import lifecycle
from orchestrator.plan.expand import (
    ResolvedSweep,
    build_plan,
    check_writable,
    max_repeats,
    resolve_sweep,
    results_root_for,
)
from orchestrator.spec.load import load_spec
from orchestrator.store import records as sweep_record
from orchestrator.store.compact import compact_finished, release_for_rerun

if TYPE_CHECKING:
    from orchestrator.dispatch.dispatcher import Reuse, SweepOutcome



def add_sweep_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("sweep", type=Path, help="sweep YAML file")
    parser.add_argument("overrides", nargs="*", metavar="KEY=VALUE",
                        help="dotlist overrides of the sweep's keys, e.g. params.num_envs=64 repeats=1 "
                             "sides.b.ref=main; +KEY=VALUE adds a key it lacks, e.g. +sides.c.ref=main")


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("sweep", nargs="?", type=Path, help="sweep YAML file")
    source.add_argument("--resume", metavar="SWEEP_ID|latest",
                        help="run again the runs of a recorded sweep that are not ok (same SHAs, run keys)")
    parser.add_argument("overrides", nargs="*", metavar="KEY=VALUE",
                        help="dotlist overrides of the sweep's keys, e.g. params.num_envs=64 repeats=1 "
                             "sides.b.ref=main; +KEY=VALUE adds a key it lacks, e.g. +sides.c.ref=main")
    parser.add_argument("--results", metavar="DIR",
                        help="with --resume: the results root holding the sweep (default: 'results' in the "
                             "git repo of the current directory); a new sweep's is its results key")
    parser.add_argument("--scheduler", metavar="ADDR",
                        help="tcp://HOST:PORT of a Dask scheduler (default: an embedded LocalCluster)")
    parser.add_argument("--no-progress", action="store_true",
                        help="no progress bars (the dashboard URL and one line per finished run remain)")
    add_tls_arguments(parser)


def cmd_plan(args: argparse.Namespace) -> int:
    """Validate a sweep and print its plan without running anything."""
    resolved = _resolve(args)
    sweep_id = sweep_record.base_sweep_id(resolved.spec.name, datetime.now(UTC))
    print(format_plan(resolved, build_plan(resolved, sweep_id)))
    for line in _noise_estimates(resolved):
        print(line)
    return 0


def _noise_estimates(resolved: ResolvedSweep) -> list[str]:
    """How many rounds the gates need, from the noise of earlier sweeps of the cases on this host."""
    import platform

    from orchestrator.analysis.noise_history import noise_lines
    from orchestrator.analysis.sequential import Looks

    spec = resolved.spec
    return noise_lines(resolved.results_root, spec.gates, list(spec.cases), platform.node(),
                       Looks(spec.repeats, max_repeats(spec)))


def cmd_run(args: argparse.Namespace) -> int:
    """Validate, record, dispatch, then report; the exit code follows the report."""
    client_security(args, args.scheduler)  # the TLS options checked before anything is recorded
    if args.resume is not None:
        return _resume(args)
    if args.results is not None:
        raise InvalidInputError("--results goes with --resume; a new sweep writes to its results key "
                                "(override it with results=DIR)")
    resolved = _resolve(args)
    return _report_run(resolved.results_root, start_sweep(args, resolved))


def start_sweep(args: argparse.Namespace, resolved: ResolvedSweep, reuse: Reuse | None = None) -> str:
    """Record and dispatch a new sweep (``args``: ``scheduler``, ``no_progress``); its sweep id.

    ``run`` and each step of ``bisect`` go through here; the report is the caller's. ``reuse``: the
    dispatcher's (``store.reuse``), for runs an earlier sweep already made.
    """
    root = resolved.results_root
    check_writable(root)
    created = datetime.now(UTC)
    sweep_id = sweep_record.reserve_sweep_id(root, resolved.spec.name, created)
    runs = build_plan(resolved, sweep_id)
    record = lifecycle.new_record(resolved, sweep_id, created, len(runs))
    sweep_record.write_record(root, sweep_id, record)
    say(f"sweep {sweep_id}: {len(runs)} runs, results under {root}")
    try:
        with sweep_record.sweep_lock(root, sweep_id):
            _dispatch(args, resolved, record, runs, reuse=reuse)
            compact_finished(root, sweep_id)
    except InvalidInputError:  # found before anything was dispatched: leave nothing behind
        sweep_record.discard(root, sweep_id)
        raise
    return sweep_id


def _resume(args: argparse.Namespace) -> int:
    """``run --resume``: dispatch again the recorded sweep's runs that are not ok, then report it whole."""
    root = results_root_for(args.results or "results", Path.cwd())
    sweep_id = sweep_record.resolve_sweep_id(root, args.resume)
    resume_sweep(args, root, sweep_id)
    return _report_run(root, sweep_id)


def resume_sweep(args: argparse.Namespace, root: Path, sweep_id: str, reuse: Reuse | None = None) -> None:
    """Dispatch again the runs of recorded sweep ``sweep_id`` that are not ok (the report is the caller's)."""
    from orchestrator.plan import resume

    plan = resume.plan_resume(root, sweep_id)  # checks everything, writes nothing
    with sweep_record.sweep_lock(root, sweep_id):
        plan = plan.refreshed()  # what is ok now that no other client runs the sweep
        release_for_rerun(root, sweep_id, [key for key, status in plan.statuses.items() if status != "ok"])
        todo = plan.todo
        say(f"sweep {sweep_id}: resuming {len(todo)} of {len(plan.runs)} runs (the others are ok), "
            f"results under {root}")
        if todo or plan.adaptive:
            record = lifecycle.resumed(plan.record, root, datetime.now(UTC))
            _dispatch(args, plan.resolved, record, todo,
                      lambda outcome: replace(outcome, runs=plan.merged_outcomes(outcome.runs)),
                      plan.ok_keys, reuse=reuse)
        compact_finished(root, sweep_id)


def _dispatch(args: argparse.Namespace, resolved: ResolvedSweep, record: dict, runs: list[PlannedRun],
              complete: Callable[[SweepOutcome], SweepOutcome] | None = None, done: set[str] | None = None,
              reuse: Reuse | None = None) -> None:
    """Dispatch ``runs`` and the adaptive rounds after them (skipping the ``done`` run keys) and store
    what happened (``complete`` adds runs not dispatched) in the record."""
    from orchestrator.dispatch.adaptive import run_until_decided  # imports Dask: only when actually running

    root, sweep_id = resolved.results_root, record["sweep_id"]
    runs = [replace(run, token=str(record.get("client_token") or "")) for run in runs]

    def connected(scheduler: str, dashboard_url: str | None) -> None:
        """Record where the sweep runs, so `shasweep status` and `shasweep cancel` find its scheduler."""
        record.update(scheduler=scheduler, dashboard_url=dashboard_url)
        sweep_record.write_record(root, sweep_id, record)

    try:
        outcome, adaptive = run_until_decided(
            resolved, record, runs, done=done, scheduler=args.scheduler,
            continue_on_error=resolved.spec.continue_on_error, show_progress=not args.no_progress,
            on_connect=connected, security=client_security(args, args.scheduler),
            hosts=resolved.spec.hosts, reuse=reuse)
    except InvalidInputError:  # found before dispatching: the caller decides what the record keeps
        raise
    except BaseException as exc:
        reason = f"{type(exc).__name__}: {exc}"
        sweep_record.write_record(root, sweep_id, lifecycle.aborted(record, reason))
        raise
    if adaptive is not None:
        record["adaptive"] = adaptive
    if outcome is None:  # nothing was left to run: the record still gets every run's outcome
        from orchestrator.dispatch.dispatcher import SweepOutcome

        outcome = SweepOutcome(runs=[], host=record.get("host") or {})
    finished = complete(outcome) if complete else outcome
    sweep_record.write_record(root, sweep_id, finished.finished_record(record))


def _report_run(root: Path, sweep_id: str) -> int:
    """The report at the end of ``run``, with how to resume when a run is not ok."""
    def resume_hint(code: int) -> None:
        if code == EXIT_RUN_FAILED:
            say(f"to run again the runs that are not ok: shasweep run --resume {sweep_id} --results {root}")

    return print_report(root, sweep_id, html=True, before_verdict=resume_hint)


def say(text: str) -> None:
    """One line: on a terminal wrapped to its width (a long path folded, not cut); piped, as is."""
    from orchestrator.render.terminal import terminal_console

    console = terminal_console()
    if console.is_terminal:
        console.print(text, overflow="fold")
    else:
        print(text, flush=True)


def format_plan(resolved: ResolvedSweep, runs: list[PlannedRun]) -> str:
    """The sides with their SHAs, then one line per run in execution order."""
    spec = resolved.spec
    lines = [f"sweep {spec.name}: {len(runs)} runs ({len(spec.cases)} cases x {len(spec.sides)} sides x "
             f"{spec.repeats} repeats, order {spec.order.value}), repo {resolved.repo}",
             f"results: {resolved.results_root}"]
    most = max_repeats(spec)
    if most > spec.repeats:
        extra = len(spec.cases) * len(spec.sides) * (most - spec.repeats)
        budget = f", or until the runs took budget_s={spec.budget_s:g} s" if spec.budget_s else ""
        lines.append(f"adaptive: min {len(runs)} runs, max {len(runs) + extra} runs: after round "
                     f"{spec.repeats}, one more round at a time of the undecided cells and their "
                     f"baselines, up to max_repeats={most}{budget}")
    if spec.pythonpath != ["."]:
        lines.append(f"pythonpath (first on the bench's PYTHONPATH): {', '.join(spec.pythonpath)}")
    for label, side in spec.sides.items():
        settings = resolved.settings[label]
        marker = " (baseline)" if label == spec.baseline else ""
        lines.append(f"side {label}{marker}: {side.ref} = {resolved.shas[label]}, "
                     f"variant {settings.variant}, params {_params_text(settings.params)}")
    row = "{:>4}  {:<12} {:<40} {:>3}  {:<12}  {}"
    lines.append(row.format("#", "side", "case", "rep", "sha", "run_key"))
    lines += [row.format(r.order, r.side, r.case, r.repeat, r.sha[:12], r.run_key) for r in runs]
    return "\n".join(lines)


def _params_text(params: dict) -> str:
    return " ".join(f"{name}={value}" for name, value in params.items()) or "-"


def _resolve(args: argparse.Namespace) -> ResolvedSweep:
    return resolve_sweep(load_spec(args.sweep, args.overrides), Path.cwd(), args.sweep.resolve().parent)
