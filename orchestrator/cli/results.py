"""``shasweep report``, ``compare`` and ``history``: read stored results and print or write them."""


from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from orchestrator.cli.last_n import add_last_arguments, last_n
from orchestrator.errors import InvalidInputError
from orchestrator.plan.roots import results_root_for
from orchestrator.store import records as sweep_record
from orchestrator.store.atomic import write_text_atomic

if TYPE_CHECKING:  # the report model and its renderers are imported by the commands that need them
    from orchestrator.analysis.report_model import Report
    from orchestrator.render.page import Page



FORMATS: tuple[str, ...] = ("md", "html")
HISTORY_SWEEPS = 200  # history's default window: as many as the change-point search looks at per side
# ``report`` only: documents for other tools, printed (or written to --out) instead of the report
EXPORT_FORMATS: tuple[str, ...] = ("bmf", "junit", "gh")


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
    root = results_root_for(args.results, Path.cwd())
    sweep_id = sweep_record.resolve_sweep_id(root, args.sweep_id)
    if args.format in EXPORT_FORMATS:
        return export_report(root, sweep_id, args.format, args.out, args.side)
    for flag, value in (("--out", args.out), ("--side", args.side)):
        if value is not None:
            raise InvalidInputError(f"applies to --format {', '.join(EXPORT_FORMATS)} only", flag)
    return print_report(root, sweep_id, html=args.format == "html")


def export_report(results_root: Path, sweep_id: str, fmt: str, out: Path | None, side: str | None) -> int:
    """Print (or write to ``out``) the sweep's report as a document for another tool; the report's exit
    code."""
    import json

    from orchestrator.render.bmf import bmf_document
    from orchestrator.render.gh_summary import gh_markdown
    from orchestrator.render.junit import junit_xml

    if side is not None and fmt != "bmf":
        raise InvalidInputError("applies to --format bmf only", "--side")
    report = _load_report(results_root, sweep_id)
    if fmt == "bmf":
        text = json.dumps(bmf_document(report, side), indent=2, allow_nan=False) + "\n"
    else:
        text = junit_xml(report) if fmt == "junit" else gh_markdown(report)
    if out is None:
        print(text, end="")
    else:
        write_text_atomic(out, text)
    return report.exit_code


def cmd_compare(args: argparse.Namespace) -> int:
    """Print the medians of two sweeps side by side with the change in percent."""
    from orchestrator.render import compare

    root = results_root_for(args.results, Path.cwd())
    before, after = (sweep_record.resolve_sweep_id(root, s) for s in (args.sweep_a, args.sweep_b))
    if not args.highlight > 0:
        raise InvalidInputError(f"must be > 0, got {args.highlight:g}", "--highlight")
    comparison = compare.make_comparison(root, before, after, args.highlight)
    default_html = root / "reports" / f"compare-{before}-vs-{after}.html"
    _emit(args, compare.to_markdown(comparison), lambda: compare.comparison_page(comparison), default_html)
    return 0


def cmd_history(args: argparse.Namespace) -> int:
    """Print every recorded run of one case over time."""
    from orchestrator.render import history

    root = results_root_for(args.results, Path.cwd())
    query = history.HistoryQuery(case=args.case, side=args.side, sha=args.sha, metric=args.metric,
                                 steps=args.steps, last=last_n(args))
    runs = history.load_history(root, query)
    default_html = root / "reports" / history.html_file_name(query)
    _emit(args, history.to_markdown(runs, query), lambda: history.history_page(runs, query), default_html)
    return 0


def print_report(results_root: Path, sweep_id: str, html: bool = False,
                 before_verdict: Callable[[int], None] | None = None) -> int:
    """Print the compact report, write the full one (Markdown, CSV, verdicts JSON, HTML if asked),
    and end with the verdict line; ``before_verdict(exit code)`` may print just above it."""
    from orchestrator.render.console import terminal_console
    from orchestrator.render.markdown import write_report
    from orchestrator.render.terminal import render_report, report_verdict_line
    from orchestrator.render.verdicts_json import write_verdicts_json
    from orchestrator.store.query import check_files

    report = _load_report(results_root, sweep_id)
    check_files(results_root, sweep_id)  # names damaged steps files too
    md, csv = write_report(report, results_root)  # every file first: printing may fail (a closed pipe)
    written = [md, csv, write_verdicts_json(report, results_root)]
    if html:
        from orchestrator.render.sweep_page import write_sweep_html  # imports Bokeh: only when asked

        written.append(write_sweep_html(results_root, report))
    console = terminal_console()
    console.print(render_report(report, console.width))
    console.print(f"full report in {_shown(md.parent)}: " + ", ".join(p.name for p in written),
                  overflow="fold")
    if before_verdict is not None:
        before_verdict(report.exit_code)
    console.print(report_verdict_line(report), overflow="fold")
    return report.exit_code


def _shown(path: Path) -> str:
    """``path`` relative to the current directory when under it (short enough for a terminal line)."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _load_report(results_root: Path, sweep_id: str) -> Report:
    """The report model of ``sweep_id``; exit 2 naming a damaged file or a record of another shape."""
    import pyarrow as pa

    from orchestrator.analysis.report_model import make_report

    try:
        return make_report(results_root, sweep_id)
    except pa.ArrowException as exc:  # a damaged file in the results root; pyarrow names it
        raise InvalidInputError(f"cannot read the results of sweep {sweep_id!r}: {exc}") from None
    except (KeyError, TypeError, AttributeError) as exc:  # a hand-made or truncated record
        record = sweep_record.record_path(results_root, sweep_id)
        raise InvalidInputError(f"the sweep record {record} has an unexpected shape "
                                f"({type(exc).__name__}: {exc})") from None


def _emit(args: argparse.Namespace, markdown: str, page: Callable[[], Page], default_html: Path) -> None:
    """Print ``markdown``; write the page (``--format html``) or the Markdown (``--out``) to a file."""
    print(markdown)
    if args.format == "html":
        print(f"HTML written to {page().write(args.out or default_html)}")
    elif args.out:
        write_text_atomic(args.out, markdown)
        print(f"Markdown written to {args.out}")
