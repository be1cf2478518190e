"""The ``shasweep`` command line: the parser, one ``Command`` per subcommand (each in its own module
of this package), and the entry point that turns every error into its exit code."""


from __future__ import annotations

import argparse
import gc
import importlib
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from orchestrator.cli.closed_pipes import tolerate_closed_pipes
from orchestrator.cli.signals import stop_signals_interrupt
from orchestrator.errors import EXIT_RUN_FAILED, ShasweepError, interruption
from orchestrator.printable import printable

EPILOG = """exit codes:
  0  all runs ok and every gate passed
  1  all runs ok, at least one gate failed
  2  invalid input (sweep YAML, overrides, refs, repo, results root, sweep id), nothing dispatched;
     or a gate's metric the bench's first ok run does not report (the sweep stops, its runs kept)
  3  a run failed, timed out or was cancelled, or the cluster could not run it, or a gate has
     NO DATA (no ok run on a side it needs); this wins over 1 and 4
  4  all runs ok, no gate failed, at least one gate inconclusive (interval straddles its bound)
"""


TRY_EPILOG = """exit codes:
  0  the run was ok and reported every metric the sweep's gates and metrics need
  2  invalid input (sweep YAML, overrides, refs, --side, --case), nothing run
  3  the run failed (its error says why: exit code, output tail, log files), or it did not report a
     metric the sweep needs
"""


CI_EPILOG = """exit codes:
  0  every gate passed (or nothing compared: the suite is new in this change)
  1  a gate failed: the head is slower than a gate allows
  2  invalid input: a ref or commit missing from the clone (a shallow clone: fetch-depth: 0), no suite
     found (what was looked for is said), a budget too small for two rounds (the minimum is said),
     [tool.shasweep] of pyproject.toml
  3  a run failed or was interrupted, or a gate has NO DATA
  4  inconclusive within the budget: treat as neutral, or run again with a larger --budget
"""


COMMENT_EPILOG = """exit codes:
  0  the comment was posted or updated, or it cannot be here (no pull request, a fork, no token: said why)
  2  invalid input (--body)
  3  the API refused or could not be reached (said how)
"""


OTHER_EPILOG = """exit codes:
  0  done
  2  invalid input (arguments, sweep id, results root)
  3  a run, system or cluster failure
"""


def package_version() -> str:
    """The installed shasweep distribution's version."""
    from importlib import metadata

    try:
        return metadata.version("shasweep")
    except metadata.PackageNotFoundError:
        return "unknown (not installed)"


class _VersionAction(argparse.Action):
    """``--version``: the installed version, looked up only when asked for."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="show the installed version and exit", **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any) -> None:
        print(f"{parser.prog} {package_version()}")
        parser.exit()


@dataclass(frozen=True)
class Command:
    """A subcommand: how to declare its arguments and the function that runs it (returns an exit code)."""

    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    handler: Callable[[argparse.Namespace], int]
    judges_gates: bool = False  # its exit code follows the sweep's verdict: its help shows EPILOG
    epilog: str | None = None  # its own exit codes (default: EPILOG or OTHER_EPILOG)


def _lazy(module: str, name: str) -> Callable[..., Any]:
    """``module.name``, imported when first called: a command imports only what it uses."""
    def call(*args: Any) -> Any:
        return getattr(importlib.import_module(f"orchestrator.cli.{module}"), name)(*args)

    call.__qualname__ = f"{module}.{name}"
    return call


def _command(help_text: str, module: str, verb: str, judges_gates: bool = False,
             arguments: str | None = None, epilog: str | None = None) -> Command:
    """``verb`` of ``orchestrator.cli.<module>``: ``add_<verb>_arguments`` (or ``arguments``) and
    ``cmd_<verb>``."""
    return Command(help_text, _lazy(module, arguments or f"add_{verb}_arguments"),
                   _lazy(module, f"cmd_{verb}"), judges_gates, epilog)


COMMANDS: dict[str, Command] = {
    "run": _command("run a sweep and report it", "run", "run", judges_gates=True),
    "plan": _command("validate a sweep and print its plan, running nothing", "run", "plan",
                     arguments="add_sweep_arguments"),
    "try": _command("run the bench once at one side's SHA on this host and show what shasweep reads from "
                    "it; records nothing", "trial", "try", epilog=TRY_EPILOG),
    "bisect": _command("find the first commit between --good and --bad whose gate FAILs", "bisect", "bisect"),
    "ci": _command("gate a pull request: sweep the head against its merge base with the suite found, "
                   "within a time budget, and write every CI output", "ci", "ci", epilog=CI_EPILOG),
    "comment": _command("post shasweep ci's comment on the pull request, or update the one posted before",
                        "ci", "comment", epilog=COMMENT_EPILOG),
    "report": _command("print and write the report of a stored sweep", "results", "report",
                       judges_gates=True),
    "list": _command("the recorded sweeps, newest first: status, runs, verdict counts", "sweeps", "list"),
    "gc": _command("remove unused bench worktrees", "gc", "gc"),
    "compare": _command("compare the medians of two sweeps (A earlier, B later)", "results", "compare"),
    "waive": _command("record an accepted exception: a gate's FAIL no longer fails the sweep "
                      "(or --revoke it)", "waive", "waive"),
    "history": _command("every recorded run of one case over time", "results", "history"),
    "site": _command("build the results site: every case across commits, as static HTML", "site", "site"),
    "status": _command("runs done/running/queued and the current step of a sweep", "status", "status"),
    "cancel": _command("cancel a running sweep: kill its running bench, start no queued run", "status",
                       "cancel"),
    "compact": _command("merge finished sweeps' per-run files into one runs and one steps file each",
                        "compact", "compact"),
    "index": _command("bring the results index up to date (or --rebuild it)", "compact", "index"),
    "scheduler": _command("run the Dask scheduler with the live /shasweep board", "servers", "scheduler"),
    "worker": _command("run the pinned bench worker (1 thread, resource GPU=1)", "servers", "worker"),
}


def build_parser(selected: str | None = None) -> argparse.ArgumentParser:
    """The parser; only ``selected``'s arguments are declared (None: every command's), so a command
    imports its own modules and no other's."""
    parser = argparse.ArgumentParser(
        prog="shasweep", description="A/B performance sweeps of git SHAs on a pinned Dask bench worker.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action=_VersionAction)
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, command in COMMANDS.items():
        epilog = command.epilog or (EPILOG if command.judges_gates else OTHER_EPILOG)
        sub = subparsers.add_parser(name, help=command.help, description=command.help, epilog=epilog,
                                    formatter_class=argparse.RawDescriptionHelpFormatter)
        if selected is None or name == selected:
            command.add_arguments(sub)
        sub.set_defaults(handler=command.handler)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``shasweep`` console script; returns the exit code. Called as the program
    (``argv`` None), it freezes what it built once done: the process exits next, and the final
    collection of every object a sweep left (pandas, Dask, Arrow) would take about a second."""
    code = _main(sys.argv[1:] if argv is None else argv)
    if argv is None:
        gc.freeze()
    return code


def _main(argv: list[str]) -> int:
    parser = build_parser(next((arg for arg in argv if not arg.startswith("-")), ""))
    try:
        args, extra = parser.parse_known_args(argv)
        _take_late_overrides(parser, args, extra)
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
        return int(exc.code or 0)
    # `shasweep report latest | head -1`: the reader may leave early; `kill PID`: stop as Ctrl-C does
    with tolerate_closed_pipes(), stop_signals_interrupt():
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    """The subcommand's exit code; every error becomes one line on stderr and its code."""
    try:
        return args.handler(args)
    except ShasweepError as exc:
        return _fail(str(exc), exc.exit_code)
    except KeyboardInterrupt as exc:  # Ctrl-C, SIGTERM, SIGHUP (cli.signals)
        return _fail(interruption(exc), EXIT_RUN_FAILED)
    except (OSError, MemoryError, RecursionError) as exc:  # the system, not the input
        return _fail(f"{type(exc).__name__}: {exc}", EXIT_RUN_FAILED)
    except Exception as exc:  # noqa: BLE001 - never a traceback, never exit 1 (that means "gate failed")
        return _fail(f"unexpected {type(exc).__name__}: {exc}", EXIT_RUN_FAILED)


def _fail(message: str, code: int) -> int:
    """``message`` as one line on stderr; returns ``code``."""
    one_line = " ".join(line.strip() for line in message.splitlines() if line.strip())
    print(f"shasweep: error: {printable(one_line)}", file=sys.stderr)
    return code


def _take_late_overrides(parser: argparse.ArgumentParser, args: argparse.Namespace, extra: list[str]) -> None:
    """KEY=VALUE and ~KEY overrides written after an option (``run x.yaml --no-progress a=b``) join
    the others; anything else argparse did not recognise is a usage error (exit 2)."""
    if not extra:
        return
    unknown = [arg for arg in extra if arg.startswith("-") or ("=" not in arg and not arg.startswith("~"))]
    if unknown or not hasattr(args, "overrides"):
        parser.error(f"unrecognized arguments: {' '.join(unknown or extra)}")
    args.overrides = [*args.overrides, *extra]
