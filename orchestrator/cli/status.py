"""``shasweep status`` and ``shasweep cancel``: arguments in, ``session.status`` asks the sweep's
scheduler (or reads its record and run files), the status printed."""

from __future__ import annotations

import argparse

from orchestrator.printable import printable
from orchestrator.session.status import CANCEL_WAIT_S, cancel_sweep, sweep_status


def add_status_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("sweep_id", nargs="?", default="latest", metavar="SWEEP_ID|latest",
                        help="the sweep (default: latest)")
    _common_arguments(parser)


def add_cancel_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("sweep_id", metavar="SWEEP_ID|latest", help="the sweep to cancel")
    _common_arguments(parser)
    parser.add_argument("--wait-s", type=float, default=CANCEL_WAIT_S, metavar="SECONDS",
                        help=f"wait this long for the sweep to stop (default {CANCEL_WAIT_S:g}; 0: no wait)")


def cmd_status(args: argparse.Namespace) -> int:
    """Print runs done/running/queued and the current step of a sweep."""
    status = sweep_status(args.sweep_id, args.results, scheduler=args.scheduler)
    print(_shown(status.lines()))
    return 0


def cmd_cancel(args: argparse.Namespace) -> int:
    """Cancel a running sweep: its running bench is killed, its queued runs never start."""
    status = cancel_sweep(args.sweep_id, args.results, scheduler=args.scheduler, wait_s=args.wait_s,
                          say=lambda line: print(printable(line), flush=True))
    if status is not None and status.lines():
        print(_shown(status.lines()))
    return 0


def _shown(lines: list[str]) -> str:
    """The status's lines, each ``printable`` (a case name may hold anything)."""
    return "\n".join(printable(line) for text in lines for line in text.splitlines())


def _common_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scheduler", metavar="ADDR",
                        help="tcp://HOST:PORT of the sweep's scheduler (default: the one its record names)")
    parser.add_argument("--results", default="results", metavar="DIR",
                        help="results root (default: 'results' in the git repo of the current directory)")
