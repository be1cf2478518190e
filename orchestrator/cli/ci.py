"""``shasweep ci`` and ``shasweep comment``: arguments in, the session (``session.ci``,
``session.pr_comment``) does the work, its lines printed."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_ci_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--base", metavar="REF",
                        help="compare with the merge base of REF and the head (default: the pull request's "
                             "base, then tool.shasweep.base, then origin/HEAD)")
    parser.add_argument("--head", metavar="REF",
                        help="the commit to judge (default: the pull request's head, else HEAD)")
    parser.add_argument("--budget", metavar="DURATION",
                        help="wall time the sweep may spend, from the command's start, e.g. 90s, 10m, 1h "
                             "(default: tool.shasweep.budget, else 10m); no round starts that would end "
                             "after it")
    parser.add_argument("--path", dest="paths", action="append", default=[], metavar="PATH",
                        help="where the suite is (a file or directory; repeatable; default: "
                             "tool.shasweep.paths, else found in the whole repository)")
    parser.add_argument("--results", metavar="DIR",
                        help="results root (default: tool.shasweep.results, else .shasweep/results)")
    parser.add_argument("--out", metavar="DIR",
                        help="where the comment, summary, JUnit, BMF and outputs.env go (default: "
                             "tool.shasweep.out, else .shasweep/ci)")
    parser.add_argument("--instrument", metavar="TOOL",
                        help="none or valgrind: count each benchmark's instructions too, under valgrind "
                             "(default: tool.shasweep.instrument, else none)")
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--plan", action="store_true",
                      help="find the suite and print the sweep it would run, with the minimum budget; "
                           "run nothing")
    what.add_argument("--locate", action="store_true",
                      help="print (and write as step outputs) the results root and the outputs directory; "
                           "run nothing")
    parser.add_argument("--no-progress", action="store_true",
                        help="no progress bars (the default where stdout is not a terminal)")


def cmd_ci(args: argparse.Namespace) -> int:
    """Compare the head with its merge base and write every CI output; the report's exit code."""
    from orchestrator.session.ci import CiOptions, locate, run_ci

    options = CiOptions(base=args.base, head=args.head, budget=args.budget, results=args.results,
                        out=args.out, paths=tuple(args.paths), instrument=args.instrument,
                        plan_only=args.plan,
                        progress=not args.no_progress and sys.stdout.isatty())
    result = locate(options) if args.locate else run_ci(options)
    for line in result.lines:
        print(line)
    return result.exit_code


def add_comment_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--body", type=Path, required=True, metavar="FILE",
                        help="the comment's Markdown (shasweep ci writes it to .shasweep/ci/comment.md)")
    parser.add_argument("--token-env", metavar="NAME",
                        help="the environment variable holding the token (default: GITHUB_TOKEN on GitHub, "
                             "SHASWEEP_GITLAB_TOKEN on GitLab)")


def cmd_comment(args: argparse.Namespace) -> int:
    """Post the comment on the pull request, or update the one posted before; say why when it cannot."""
    from orchestrator.session.pr_comment import post_comment

    outcome = post_comment(args.body, token_env=args.token_env)
    print(outcome.line)
    return outcome.exit_code
