"""``--python PATH`` of plan, run, try and bisect: the interpreter or virtual environment that runs the
benches, passed on as the sweep's ``python`` key (``spec.interpreters`` checks it)."""

from __future__ import annotations

import argparse
import os

from orchestrator.errors import InvalidInputError


def add_python_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--python", metavar="PATH",
                        help="the interpreter, or virtual environment directory, that runs the benches "
                             "({python}); sets the sweep's python key (default: the one shasweep runs on)")


def with_python(args: argparse.Namespace, overrides: list[str]) -> list[str]:
    """``overrides`` and, with ``--python``, the ``python`` key it sets: a path taken from the current
    directory (a bare name that is no file here is looked up on PATH, as the key does)."""
    if args.python is None:
        return list(overrides)
    if getattr(args, "resume", None) is not None:
        raise InvalidInputError("--python goes with a sweep file: a resumed sweep runs with the interpreter "
                                "it recorded", "--python")
    value = os.path.expanduser(args.python)
    if os.sep in value or os.path.exists(value):
        value = os.path.abspath(value)
    return [*overrides, f"python={value}"]
