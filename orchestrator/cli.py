"""The ``shasweep`` command line: one small function per subcommand, registered in ``COMMANDS``."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa

from orchestrator import entrypoints, status, sweep_record
from orchestrator.errors import EXIT_RUN_FAILED, InvalidInputError, ShasweepError
from orchestrator.plan import ResolvedSweep, build_plan, resolve_sweep, results_root_for
from orchestrator.report import make_report, to_markdown, write_report
from orchestrator.runs import PlannedRun
from orchestrator.spec import load_spec

if TYPE_CHECKING:
    from orchestrator.dispatch import SweepOutcome
    from orchestrator.reports.page import Page

FORMATS: tuple[str, ...] = ("md", "html")

EPILOG = """exit codes:
  0  all runs ok and every gate passed
  1  all runs ok, at least one gate failed
  2  invalid input (sweep YAML, overrides, refs, repo, results root, sweep id), nothing dispatched
  3  a run failed, timed out or was cancelled, or the cluster could not run it
  4  all runs ok, no gate failed, at least one gate inconclusive (interval straddles its bound)
"""


@dataclass(frozen=True)
class Command:
    """A subcommand: how to declare its arguments and the function that runs it (returns an exit code)."""

    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    handler: Callable[[argparse.Namespace], int]


def _sweep_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("sweep", type=Path, help="sweep YAML file")
    parser.add_argument("overrides", nargs="*", metavar="KEY=VALUE",
                        help="dotlist overrides, e.g. params.num_envs=64 repeats=1 sides.b.ref=main")


def _run_arguments(parser: argparse.ArgumentParser) -> None:
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


def _results_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--results", default="results", metavar="DIR",
                        help="results root (default: 'results' in the git repo of the current directory)")


def _format_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", choices=FORMATS, default="md",
                        help="md: print Markdown (default); html: also write a self-contained HTML page")
    parser.add_argument("--out", type=Path, metavar="PATH",
                        help="write the output of --format here (default for html: under <results>/reports)")


def _report_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("sweep_id", metavar="SWEEP_ID|latest")
    _results_argument(parser)
    parser.add_argument("--format", choices=FORMATS, default="md",
                        help="md: Markdown and CSV (default); html: also <results>/reports/<id>.html")


def _compare_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("sweep_a", metavar="SWEEP_A", help="the earlier sweep id (or latest)")
    parser.add_argument("sweep_b", metavar="SWEEP_B", help="the later sweep id (or latest)")
    _results_argument(parser)
    _format_arguments(parser)


def _history_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--case", required=True, metavar="ALGO/TASK/SIM")
    parser.add_argument("--side", help="only runs of this side label")
    parser.add_argument("--sha", metavar="PREFIX", help="only runs of SHAs starting with PREFIX")
    parser.add_argument("--metric", default="throughput", help="throughput (default) or a *_ms phase")
    _results_argument(parser)
    _format_arguments(parser)


def _gc_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--max-age-s", type=float, default=0.0, metavar="SECONDS",
                        help="remove only worktrees unused for this long (default 0: every unused one)")


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
    record = sweep_record.new_record(resolved, sweep_id, created, len(runs))
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
    from orchestrator import resume

    root = results_root_for(args.results or "results", Path.cwd())
    sweep_id = sweep_record.resolve_sweep_id(root, args.resume)
    plan = resume.plan_resume(root, sweep_id)  # checks everything, writes nothing
    with sweep_record.sweep_lock(root, sweep_id):
        plan = plan.refreshed()  # what is ok now that no other client runs the sweep
        todo = plan.todo
        print(f"sweep {sweep_id}: resuming {len(todo)} of {len(plan.runs)} runs (the others are ok), "
              f"results under {root}", flush=True)
        if todo:
            record = sweep_record.resumed(plan.record, root, datetime.now(UTC))
            _dispatch(args, plan.resolved, record, todo, plan.merge)
    return _report_run(root, sweep_id)


def _dispatch(args: argparse.Namespace, resolved: ResolvedSweep, record: dict, runs: list[PlannedRun],
              complete: Callable[[SweepOutcome], SweepOutcome] | None = None) -> None:
    """Dispatch ``runs`` and store what happened (``complete`` adds runs not dispatched) in the record."""
    from orchestrator.dispatch import run_sweep  # imports Dask: only when actually running

    root, sweep_id = resolved.results_root, record["sweep_id"]

    def connected(scheduler: str, dashboard_url: str | None) -> None:
        """Record where the sweep runs, so `shasweep status` and `shasweep cancel` find its scheduler."""
        record.update(scheduler=scheduler, dashboard_url=dashboard_url)
        sweep_record.write_record(root, sweep_id, record)

    try:
        outcome = run_sweep(runs, scheduler=args.scheduler, continue_on_error=resolved.spec.continue_on_error,
                            show_progress=not args.no_progress, on_connect=connected)
    except InvalidInputError:  # found before dispatching: the caller decides what the record keeps
        raise
    except BaseException as exc:
        reason = f"{type(exc).__name__}: {exc}"
        sweep_record.write_record(root, sweep_id, sweep_record.aborted(record, reason))
        raise
    done = complete(outcome) if complete else outcome
    sweep_record.write_record(root, sweep_id, sweep_record.finished(record, done))


def _report_run(root: Path, sweep_id: str) -> int:
    """The report at the end of ``run``, with how to resume when a run is not ok."""
    code = _print_report(root, sweep_id, html=True)
    if code == EXIT_RUN_FAILED:
        print(f"to run again the runs that are not ok: shasweep run --resume {sweep_id} --results {root}")
    return code


def cmd_report(args: argparse.Namespace) -> int:
    """Print (and write) the report of a stored sweep."""
    root = results_root_for(args.results, Path.cwd())
    return _print_report(root, sweep_record.resolve_sweep_id(root, args.sweep_id), html=args.format == "html")


def cmd_compare(args: argparse.Namespace) -> int:
    """Print the medians of two sweeps side by side with the change in percent."""
    from orchestrator import compare

    root = results_root_for(args.results, Path.cwd())
    before, after = (sweep_record.resolve_sweep_id(root, s) for s in (args.sweep_a, args.sweep_b))
    comparison = compare.make_comparison(root, before, after)
    default_html = root / "reports" / f"compare-{before}-vs-{after}.html"
    _emit(args, compare.to_markdown(comparison), lambda: compare.comparison_page(comparison), default_html)
    return 0


def cmd_history(args: argparse.Namespace) -> int:
    """Print every recorded run of one case over time."""
    from orchestrator import history

    root = results_root_for(args.results, Path.cwd())
    query = history.HistoryQuery(case=args.case, side=args.side, sha=args.sha, metric=args.metric)
    runs = history.load_history(root, query)
    default_html = root / "reports" / f"history-{args.case.replace('/', '_')}.html"
    _emit(args, history.to_markdown(runs, query), lambda: history.history_page(runs, query), default_html)
    return 0


def cmd_gc(args: argparse.Namespace) -> int:
    """Remove unused bench worktrees and prune git's worktree metadata."""
    from orchestrator.worktrees import WorktreePool

    pool = WorktreePool()
    removed = pool.prune(max_age_s=args.max_age_s)
    for tree in removed:
        print(f"removed {tree.path} ({tree.repo} @ {tree.sha[:12]})")
    print(f"{len(removed)} worktree(s) removed under {pool.root}")
    return 0


COMMANDS: dict[str, Command] = {
    "run": Command("run a sweep and report it", _run_arguments, cmd_run),
    "plan": Command("validate a sweep and print its plan, running nothing", _sweep_arguments, cmd_plan),
    "report": Command("print and write the report of a stored sweep", _report_arguments, cmd_report),
    "gc": Command("remove unused bench worktrees", _gc_arguments, cmd_gc),
    "compare": Command("compare the medians of two sweeps (A earlier, B later)", _compare_arguments,
                       cmd_compare),
    "history": Command("every recorded run of one case over time", _history_arguments, cmd_history),
    "status": Command("runs done/running/queued and the current step of a sweep", status.add_status_arguments,
                      status.cmd_status),
    "cancel": Command("cancel a running sweep: kill its running bench, start no queued run",
                      status.add_cancel_arguments, status.cmd_cancel),
    "scheduler": Command("run the Dask scheduler with the live /shasweep board",
                         entrypoints.add_scheduler_arguments, entrypoints.cmd_scheduler),
    "worker": Command("run the pinned bench worker (1 thread, resource GPU=1)",
                      entrypoints.add_worker_arguments, entrypoints.cmd_worker),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="shasweep", description="A/B performance sweeps of git SHAs on a pinned Dask bench worker.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, command in COMMANDS.items():
        sub = subparsers.add_parser(name, help=command.help, description=command.help, epilog=EPILOG,
                                    formatter_class=argparse.RawDescriptionHelpFormatter)
        command.add_arguments(sub)
        sub.set_defaults(handler=command.handler)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``shasweep`` console script; returns the exit code."""
    parser = build_parser()
    try:
        args, extra = parser.parse_known_args(argv)
        _take_late_overrides(parser, args, extra)
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
        return int(exc.code or 0)
    try:
        return args.handler(args)
    except ShasweepError as exc:
        print(f"shasweep: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:  # e.g. `shasweep plan x.yaml | head`: the reader left, nothing is wrong
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _take_late_overrides(parser: argparse.ArgumentParser, args: argparse.Namespace, extra: list[str]) -> None:
    """KEY=VALUE overrides written after an option (``run x.yaml --no-progress a=b``) join the others;
    anything else argparse did not recognise is a usage error (exit 2)."""
    if not extra:
        return
    unknown = [arg for arg in extra if arg.startswith("-") or "=" not in arg]
    if unknown or not hasattr(args, "overrides"):
        parser.error(f"unrecognized arguments: {' '.join(unknown or extra)}")
    args.overrides = [*args.overrides, *extra]


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


def _print_report(results_root: Path, sweep_id: str, html: bool = False) -> int:
    try:
        report = make_report(results_root, sweep_id)
    except pa.ArrowException as exc:  # a damaged file in the results root; pyarrow names it
        raise InvalidInputError(f"cannot read the results of sweep {sweep_id!r}: {exc}") from None
    md, csv = write_report(report, results_root)
    print(to_markdown(report))
    print(f"report written to {md} and {csv}")
    if html:
        from orchestrator.reports.sweep import write_sweep_html  # imports Bokeh: only when asked

        print(f"HTML report written to {write_sweep_html(results_root, report)}")
    return report.exit_code


def _emit(args: argparse.Namespace, markdown: str, page: Callable[[], Page], default_html: Path) -> None:
    """Print ``markdown``; write the page (``--format html``) or the Markdown (``--out``) to a file."""
    print(markdown)
    if args.format == "html":
        print(f"HTML written to {page().write(args.out or default_html)}")
    elif args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(markdown, encoding="utf-8")
        print(f"Markdown written to {args.out}")


if __name__ == "__main__":
    sys.exit(main())
