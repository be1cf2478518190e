"""The ``shasweep`` command line: one small function per subcommand, registered in ``COMMANDS``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from orchestrator import sweep_record
from orchestrator.errors import ShasweepError
from orchestrator.plan import ResolvedSweep, build_plan, resolve_sweep, results_root_for
from orchestrator.report import make_report, to_markdown, write_report
from orchestrator.runs import PlannedRun
from orchestrator.spec import load_spec

EPILOG = """exit codes:
  0  all runs ok and every gate passed
  1  all runs ok, at least one gate failed
  2  invalid input (sweep YAML, overrides, refs, repo, results root, sweep id), nothing dispatched
  3  a run failed, timed out or was cancelled, or the cluster could not run it
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
    _sweep_arguments(parser)
    parser.add_argument("--scheduler", metavar="ADDR",
                        help="tcp://HOST:PORT of a Dask scheduler (default: an embedded LocalCluster)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")


def _report_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("sweep_id", metavar="SWEEP_ID|latest")
    parser.add_argument("--results", default="results", metavar="DIR",
                        help="results root (default: 'results' in the git repo of the current directory)")


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
    from orchestrator.dispatch import run_sweep  # imports Dask: only when actually running

    resolved = _resolve(args)
    created = datetime.now(UTC)
    sweep_id = sweep_record.reserve_sweep_id(resolved.results_root, resolved.spec.name, created)
    runs = build_plan(resolved, sweep_id)
    record = sweep_record.new_record(resolved, sweep_id, created, len(runs))
    sweep_record.write_record(resolved.results_root, sweep_id, record)
    print(f"sweep {sweep_id}: {len(runs)} runs, results under {resolved.results_root}", flush=True)
    try:
        outcome = run_sweep(runs, scheduler=args.scheduler, continue_on_error=resolved.spec.continue_on_error,
                            show_progress=not args.no_progress)
    except BaseException as exc:
        sweep_record.write_record(resolved.results_root, sweep_id,
                                  sweep_record.aborted(record, f"{type(exc).__name__}: {exc}"))
        raise
    sweep_record.write_record(resolved.results_root, sweep_id, sweep_record.finished(record, outcome))
    return _print_report(resolved.results_root, sweep_id)


def cmd_report(args: argparse.Namespace) -> int:
    """Print (and write) the report of a stored sweep."""
    root = results_root_for(args.results, Path.cwd())
    return _print_report(root, sweep_record.resolve_sweep_id(root, args.sweep_id))


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
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
        return int(exc.code or 0)
    try:
        return args.handler(args)
    except ShasweepError as exc:
        print(f"shasweep: error: {exc}", file=sys.stderr)
        return exc.exit_code


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


def _print_report(results_root: Path, sweep_id: str) -> int:
    report = make_report(results_root, sweep_id)
    md, csv = write_report(report, results_root)
    print(to_markdown(report))
    print(f"report written to {md} and {csv}")
    return report.exit_code


if __name__ == "__main__":
    sys.exit(main())
