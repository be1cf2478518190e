"""``shasweep list``: arguments in, ``session.listing`` reads the latest ``--last`` (50) sweeps'
records unless ``--all``, one line printed per sweep, newest first."""

from __future__ import annotations

import argparse

from orchestrator.cli.last_n import add_last_arguments, last_n
from orchestrator.session.listing import DEFAULT_SHOWN, list_sweeps


def add_list_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--results", default="results", metavar="DIR",
                        help="results root (default: 'results' in the git repo of the current directory)")
    add_last_arguments(parser, "sweeps", DEFAULT_SHOWN)


def cmd_list(args: argparse.Namespace) -> int:
    """Print one line per recorded sweep, newest first; the latest ``--last`` of them unless ``--all``."""
    listing = list_sweeps(args.results, last=last_n(args))
    rows = listing.rows
    if not rows:
        print(f"no sweeps recorded under {listing.sweeps_dir}")
        return 0
    width = max(len(row.sweep_id) for row in rows)
    status_width = max(9, *(len(row.status) for row in rows))
    for row in rows:
        print(f"{row.sweep_id:<{width}}  {row.created:<19}  {row.status:<{status_width}}  "
              f"runs ok {row.runs:<7}  {row.verdicts}")
    if listing.earlier:
        print(f"{listing.earlier} earlier sweeps not shown (--all lists every one)")
    return 0
