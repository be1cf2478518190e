"""``--last N`` / ``--all``: how many of the most recent items a listing command shows."""

from __future__ import annotations

import argparse

from orchestrator.errors import InvalidInputError


def add_last_arguments(parser: argparse.ArgumentParser, items: str, default: int) -> None:
    """``--last N`` (default ``default``) and ``--all``, which exclude each other."""
    shown = parser.add_mutually_exclusive_group()
    shown.add_argument("--last", type=int, default=default, metavar="N",
                       help=f"the N most recent {items} (default {default})")
    shown.add_argument("--all", action="store_true", help=f"every recorded one of the {items}")


def last_n(args: argparse.Namespace) -> int | None:
    """How many to show (None: all); ``InvalidInputError`` for an N below 1."""
    if args.last < 1:
        raise InvalidInputError(f"must be at least 1, got {args.last}", "--last")
    return None if args.all else args.last
