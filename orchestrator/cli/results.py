"""``shasweep report``, ``compare`` and ``history``: arguments in, the session reads the stored results
(``session.reports``, ``session.comparison``, ``session.run_history``), the output printed or written."""


from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from orchestrator.cli.last_n import add_last_arguments, last_n
from orchestrator.errors import InvalidInputError
from orchestrator.session.recorded import find_sweep, locate_results
from orchestrator.session.reports import EXPORT_FORMATS

if TYPE_CHECKING:
    from orchestrator.session.documents import Document

FORMATS: tuple[str, ...] = ("md", "html")
HISTORY_SWEEPS = 200  # history's default window: as many as the change-point search looks at per side


def _results_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--results", default="results", metavar="DIR",
                        help="results root (default: 'results' in the git repo of the current directory)")


def _format_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", choices=FORMATS, default="md",
                        help="md: print Markdown (default); html: also write a self-contained HTML page")
    parser.add_argument("--out", type=Path, metavar="PATH",
                        help="write the output of --format here (default for html: under <results>/reports)")


def add_report_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("sweep_id", metavar="SWEEP_ID|latest")
    _results_argument(parser)
    parser.add_argument("--format", choices=FORMATS + EXPORT_FORMATS, default="md",
                        help="md: Markdown and CSV (default); html: also <results>/reports/<id>.html; "
                             "bmf: Bencher Metric Format JSON; junit: the gates as JUnit XML; gh: a GitHub "
                             "job summary / PR comment (these three: only the document, printed or --out)")
    parser.add_argument("--out", type=Path, metavar="PATH",
                        help="write the bmf, junit or gh document here instead of printing it")
    parser.add_argument("--side", metavar="SIDE",
                        help="bmf: the side whose numbers are written (default: the first non-baseline side)")


def add_compare_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("sweep_a", metavar="SWEEP_A", help="the earlier sweep id (or latest)")
    parser.add_argument("sweep_b", metavar="SWEEP_B", help="the later sweep id (or latest)")
    parser.add_argument("--highlight", type=float, default=5.0, metavar="PCT",
                        help="mark a clear change of at least PCT percent as large (default: 5)")
    _results_argument(parser)
    _format_arguments(parser)


def add_history_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--case", required=True, metavar="CASE",
                        help="the case, as the sweep's cases list it, e.g. tokenize or algo/task/sim")
    parser.add_argument("--side", help="only runs of this side label")
    parser.add_argument("--sha", metavar="PREFIX", help="only runs of SHAs starting with PREFIX")
    parser.add_argument("--metric", default="throughput",
                        help="throughput (default), a *_ms phase or another metric the runs report")
    parser.add_argument("--steps", action="store_true",
                        help="the metric (a phase) as each run's median over its measured steps, read from "
                             "the steps table (default: the run's mean, from its summary row)")
    add_last_arguments(parser, "sweeps of the case", HISTORY_SWEEPS)
    _results_argument(parser)
    _format_arguments(parser)


def cmd_report(args: argparse.Namespace) -> int:
    """Print (and write) the report of a stored sweep."""
    from orchestrator.session.reports import export_report, show_report

    run = find_sweep(args.sweep_id, args.results)
    if args.format in EXPORT_FORMATS:
        exported = export_report(run, args.format, side=args.side, out=args.out)
        if exported.path is None:
            print(exported.text, end="")
        return exported.exit_code
    for flag, value in (("--out", args.out), ("--side", args.side)):
        if value is not None:
            raise InvalidInputError(f"applies to --format {', '.join(EXPORT_FORMATS)} only", flag)
    return show_report(run, html=args.format == "html")


def cmd_compare(args: argparse.Namespace) -> int:
    """Print the medians of two sweeps side by side with the change in percent."""
    from orchestrator.session.comparison import compare_sweeps, comparison_document

    root = locate_results(args.results)
    if not args.highlight > 0:
        raise InvalidInputError(f"must be > 0, got {args.highlight:g}", "--highlight")
    comparison = compare_sweeps(args.sweep_a, args.sweep_b, root, highlight_pct=args.highlight)
    _emit(args, comparison_document(comparison, root))
    return 0


def cmd_history(args: argparse.Namespace) -> int:
    """Print every recorded run of one case over time."""
    from orchestrator.session.run_history import case_history, history_document

    root = locate_results(args.results)
    history = case_history(args.case, root, side=args.side, sha=args.sha, metric=args.metric,
                           steps=args.steps, last=last_n(args))
    _emit(args, history_document(history, root))
    return 0


def _emit(args: argparse.Namespace, document: Document) -> None:
    """Print the Markdown; write the page (``--format html``) or the Markdown (``--out``) to a file."""
    print(document.markdown)
    if args.format == "html":
        print(f"HTML written to {document.write_html(args.out)}")
    elif args.out:
        document.write_markdown(args.out)
        print(f"Markdown written to {args.out}")
