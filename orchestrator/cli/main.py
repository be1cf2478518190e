"""The ``shasweep`` command line: the parser, one ``Command`` per subcommand (each in its own module
of this package), and the entry point that turns every error into its exit code."""


from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from orchestrator.cli import bisect, gc, results, run, servers, status
from orchestrator.errors import ShasweepError

if TYPE_CHECKING:
    pass



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


COMMANDS: dict[str, Command] = {
    "run": Command("run a sweep and report it", run.add_run_arguments, run.cmd_run),
    "plan": Command("validate a sweep and print its plan, running nothing", run.add_sweep_arguments,
                    run.cmd_plan),
    "bisect": Command("find the first commit between --good and --bad whose gate FAILs",
                      bisect.add_bisect_arguments, bisect.cmd_bisect),
    "report": Command("print and write the report of a stored sweep", results.add_report_arguments,
                      results.cmd_report),
    "gc": Command("remove unused bench worktrees", gc.add_gc_arguments, gc.cmd_gc),
    "compare": Command("compare the medians of two sweeps (A earlier, B later)",
                       results.add_compare_arguments,
                       results.cmd_compare),
    "history": Command("every recorded run of one case over time", results.add_history_arguments,
                       results.cmd_history),
    "status": Command("runs done/running/queued and the current step of a sweep", status.add_status_arguments,
                      status.cmd_status),
    "cancel": Command("cancel a running sweep: kill its running bench, start no queued run",
                      status.add_cancel_arguments, status.cmd_cancel),
    "scheduler": Command("run the Dask scheduler with the live /shasweep board",
                         servers.add_scheduler_arguments, servers.cmd_scheduler),
    "worker": Command("run the pinned bench worker (1 thread, resource GPU=1)",
                      servers.add_worker_arguments, servers.cmd_worker),
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
