"""``shasweep bisect``: arguments in, ``orchestrator.session.bisection`` finds the first commit of a
first-parent history whose gate FAILs against a good one, the outcome printed here.

Exit: 0 found, 2 invalid input or no regression between good and bad, 3 a run failed beyond
skipping, 4 undecided (the remaining range is printed).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from orchestrator.cli.python_option import add_python_argument, with_python
from orchestrator.cli.run import run_options
from orchestrator.cli.tls_options import add_tls_arguments
from orchestrator.errors import EXIT_GATE_INCONCLUSIVE, EXIT_OK, EXIT_RUN_FAILED, InvalidInputError
from orchestrator.plan.bisect_search import AMBIGUOUS, FOUND
from orchestrator.session import BisectOptions, BisectRun, bisect, resume_bisect
from orchestrator.session.bisection import FAILED, NO_REGRESSION


def add_bisect_arguments(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("sweep", nargs="?", type=Path, help="sweep YAML file (one case, one gate)")
    source.add_argument("--resume", metavar="BISECT_ID|latest", help="continue a recorded bisect")
    parser.add_argument("overrides", nargs="*", metavar="KEY=VALUE", help="dotlist overrides, e.g. repeats=5")
    parser.add_argument("--good", metavar="REF",
                        help="a commit whose gate PASSes (the baseline of every step)")
    parser.add_argument("--bad", metavar="REF", help="a later commit whose gate FAILs against --good")
    parser.add_argument("--results", metavar="DIR",
                        help="results root (default: the sweep's results key; with --resume: 'results' in "
                             "the git repo of the current directory)")
    parser.add_argument("--scheduler", metavar="ADDR",
                        help="tcp://HOST:PORT of a Dask scheduler (default: one embedded LocalCluster for "
                             "every step)")
    parser.add_argument("--remeasure-good", action="store_true",
                        help="measure --good again in every step instead of reusing its earlier runs: each "
                             "step's rounds then pair in time, cancelling drift between steps, at about "
                             "twice the runs")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    add_python_argument(parser)
    add_tls_arguments(parser)


def cmd_bisect(args: argparse.Namespace) -> int:
    options = run_options(args)
    if args.resume is not None:
        if args.sweep is not None or args.good or args.bad or args.overrides or args.remeasure_good \
                or args.python:
            raise InvalidInputError("--resume takes no sweep file, --good, --bad, --remeasure-good, --python "
                                    "or overrides: the record has them")
        return _report(resume_bisect(args.resume, args.results or "results", options))
    if not args.good or not args.bad:
        raise InvalidInputError("a new bisect needs --good REF and --bad REF", "--good" if not args.good else
                                "--bad")
    overrides = with_python(args, [*args.overrides, *([f"results={args.results}"] if args.results else [])])
    return _report(bisect(args.sweep, overrides, BisectOptions(args.good, args.bad, args.remeasure_good),
                          options))


def _report(job: BisectRun) -> int:
    """Print the steps, the answer and one outcome line last, write the page; the exit code."""
    print(job.steps_markdown())
    page = job.write_page()
    print(f"bisect record: {job.record_path}; HTML: {page}")
    skipped = job.record.get("skipped") or []
    if skipped:
        print("skipped (bench failed): " + ", ".join(skipped))
    tested = len({s["sha"] for s in job.record["steps"]} | {job.record["good"]})
    head = f"bisect {job.bisect_id}:"
    if job.status == FOUND:
        print(f"first bad commit: {job.record['first_bad']}\n    {job.record['first_bad_subject']}")
        print(f"{head} FOUND first bad commit {job.record['first_bad'][:12]} ({tested} SHAs "
              f"benchmarked, good included, {len(skipped)} skipped)")
        return EXIT_OK
    if job.status == NO_REGRESSION:
        raise InvalidInputError(job.problem or "nothing to bisect")
    if job.status == FAILED:
        print(f"{head} FAILED: {job.record['stopped_reason']}; continue with: shasweep bisect --resume "
              f"{job.bisect_id} --results {job.root}")
        return EXIT_RUN_FAILED
    remaining = job.record["remaining"]
    print("remaining: " + ", ".join(remaining))
    why = ("only skipped commits are left to tell apart" if job.status == AMBIGUOUS
           else "a step stayed INCONCLUSIVE")
    print(f"{head} UNDECIDED ({why}): the first bad commit is one of {len(remaining)} commits "
          f"{remaining[0][:12]}..{remaining[-1][:12]}")
    return EXIT_GATE_INCONCLUSIVE
