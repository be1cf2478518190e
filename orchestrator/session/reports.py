"""The report of a recorded sweep (docs/design.md, "Data flow", step 6): its files under
``<results>/reports/`` (Markdown, CSV, the verdicts JSON, the HTML page on request), the compact report
on the terminal, and the documents other tools read (Bencher's BMF, JUnit XML, a GitHub summary).

The model is ``SweepRun.report()`` (``analysis.report_model.Report``); ``render`` turns it into text,
and this module writes that text: every file atomically (``store.atomic``), before anything is
printed (a closed pipe cannot cost a file)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from orchestrator.display import wrapped
from orchestrator.errors import InvalidInputError
from orchestrator.printable import printable
from orchestrator.session.recorded import SweepRun, reports_dir
from orchestrator.store.atomic import write_text_atomic

if TYPE_CHECKING:
    from orchestrator.analysis.report_model import Report

EXPORT_FORMATS: tuple[str, ...] = ("bmf", "junit", "gh")  # documents for other tools


@dataclass(frozen=True)
class ExportedReport:
    """A report as a document for another tool: its text, the file it was written to (None: not
    written) and the report's exit code."""

    text: str
    path: Path | None
    exit_code: int


def write_report_files(run: SweepRun, report: Report, *, html: bool = False) -> list[Path]:
    """Write ``reports/<id>.md``, ``.csv``, ``.verdicts.json`` (and ``.html`` when asked); their paths.
    Damaged steps files of the sweep are named (a warning) first."""
    from orchestrator.render.markdown import report_markdown, to_frame
    from orchestrator.render.verdicts_json import verdicts_text
    from orchestrator.store.atomic import write_with
    from orchestrator.store.query import check_files

    check_files(run.results_root, run.sweep_id)
    out = reports_dir(run.results_root)
    out.mkdir(parents=True, exist_ok=True)
    md, csv = out / f"{run.sweep_id}.md", out / f"{run.sweep_id}.csv"
    write_text_atomic(md, report_markdown(report))
    frame = to_frame(report)
    write_with(csv, lambda tmp: frame.to_csv(tmp, index=False))
    written = [md, csv, write_text_atomic(out / f"{run.sweep_id}.verdicts.json", verdicts_text(report))]
    if html:
        written.append(write_sweep_html(run, report))
    return written


def write_sweep_html(run: SweepRun, report: Report) -> Path:
    """Write the sweep's HTML page (``render.sweep_page``: Bokeh) to ``reports/<id>.html``."""
    from orchestrator.analysis.plotted_runs import load_plotted_runs
    from orchestrator.render.sweep_page import sweep_page

    page = sweep_page(report, load_plotted_runs(run.results_root, report))
    return write_text_atomic(reports_dir(run.results_root) / f"{run.sweep_id}.html", page.render())


def show_report(run: SweepRun, *, html: bool = False, resume_hint: bool = False) -> int:
    """Write the report's files, print the compact report fitted to the terminal, where the files are,
    and the verdict line last (with ``resume_hint``, just above it how to run again the runs that were
    not ok or not run, when there are any); the exit code."""
    report = run.report()
    print_report(run, report, write_report_files(run, report, html=html), resume_hint=resume_hint)
    return report.exit_code


def print_report(run: SweepRun, report: Report, written: list[Path], *, resume_hint: bool = False) -> None:
    """Print ``report`` of ``run`` as ``show_report`` does, its files already ``written``."""
    from orchestrator.render.console import terminal_console
    from orchestrator.render.terminal import render_report, report_verdict_line

    console = terminal_console()
    console.print(render_report(report, console.width))
    width = console.width if console.is_terminal else None
    files = ", ".join(p.name for p in written)
    lines = wrapped(printable(f"full report in {_shown(written[0].parent)}: {files}"), width)
    if resume_hint and (report.missing or len(report.failures)):
        lines += ["to run again the runs that are not ok:",  # the command whole, on a line of its own
                  f"  shasweep run --resume {run.sweep_id} --results {run.results_root}"]
    for line in [*lines, *wrapped(report_verdict_line(report), width)]:
        console.print(line, soft_wrap=True)


def export_report(run: SweepRun, fmt: str, *, side: str | None = None, out: Path | None = None
                  ) -> ExportedReport:
    """The report as ``fmt`` (``EXPORT_FORMATS``), written to ``out`` when given; ``side``: the side
    whose numbers a BMF document holds (default: the first non-baseline side)."""
    import json

    from orchestrator.render.bmf import bmf_document
    from orchestrator.render.gh_summary import gh_markdown
    from orchestrator.render.junit import junit_xml

    if fmt not in EXPORT_FORMATS:
        raise InvalidInputError(f"{fmt!r} is not one of {', '.join(EXPORT_FORMATS)}", "--format")
    if side is not None and fmt != "bmf":
        raise InvalidInputError("applies to --format bmf only", "--side")
    report = run.report()
    if fmt == "bmf":
        text = json.dumps(bmf_document(report, side), indent=2, allow_nan=False) + "\n"
    else:
        text = junit_xml(report) if fmt == "junit" else gh_markdown(report)
    return ExportedReport(text, None if out is None else write_text_atomic(out, text), report.exit_code)


def import_report_modules() -> None:
    """Import what the end of a sweep needs (compaction, the report model, Markdown, Bokeh for the HTML
    page): about a second of a short sweep's end to end, spent while the client waits for its cluster
    (``RunOptions.while_connecting``). A failure here is left to the code that needs them, which
    imports them again and says what is wrong."""
    try:
        import orchestrator.analysis.plotted_runs  # noqa: F401
        import orchestrator.analysis.report_model  # noqa: F401
        import orchestrator.render.markdown  # noqa: F401
        import orchestrator.render.sweep_page  # noqa: F401
        import orchestrator.render.terminal  # noqa: F401
        import orchestrator.store.compact  # noqa: F401
    except Exception:  # noqa: BLE001 - the report's own import names the problem
        pass


def _shown(path: Path) -> str:
    """``path`` relative to the current directory when under it (short enough for a terminal line)."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)
