"""``shasweep site``: build the results site (``session.site``) and say where it is."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_site_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--results", default="results", metavar="DIR",
                        help="results root (default: 'results' in the git repo of the current directory)")
    parser.add_argument("--out", type=Path, metavar="DIR",
                        help="the site's directory, outside the results root (default: <results>-site beside "
                             "it); a second build there rewrites only what changed")


def cmd_site(args: argparse.Namespace) -> int:
    from orchestrator.session.site import build_site

    built = build_site(args.results, args.out)
    for line in built.damaged:
        print(f"damaged: {line}")
    print(f"site: {built.index} ({len(built.written)} pages written, {built.unchanged} unchanged; "
          f"{built.read} sweeps read)")
    return 0
