"""A suite's report costs time in proportion to its rows, and its HTML page is sized to what it shows
(issue 41 item 6, issue 37 item 6). The sweeps are written as ``benchmarks/report_scale.py`` writes
them (a finished pyperf suite sweep, compacted); its targets in absolute time are that script's, never
a test's: here only the ratio of two sizes and a page's bytes."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from orchestrator.analysis.plotted_runs import load_plotted_runs
from orchestrator.analysis.report_model import make_report
from orchestrator.render.bmf import bmf_document
from orchestrator.render.gh_summary import gh_markdown
from orchestrator.render.junit import junit_xml
from orchestrator.render.markdown import report_markdown
from orchestrator.render.page_limits import PLOTTED_CASES
from orchestrator.render.sweep_page import sweep_page
from orchestrator.render.terminal import render_report

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from report_scale import SWEEP_ID, write_suite_sweep  # noqa: E402

pytestmark = pytest.mark.slow


def every_output(root: Path) -> str:
    """Build the report and render every output of it; the HTML page."""
    report = make_report(root, SWEEP_ID)
    report_markdown(report), gh_markdown(report), junit_xml(report), bmf_document(report, None)
    render_report(report, 120)
    return sweep_page(report, load_plotted_runs(root, report)).render()


def cpu_seconds(root: Path) -> float:
    started = time.process_time()
    every_output(root)
    return time.process_time() - started


def test_twice_the_cases_cost_about_twice_the_time(tmp_path):
    """Linear: x2.0; a mask per cell made it x4 (quadratic). Measured in CPU time of this process, the
    smaller size first and again after the larger (the first report of a process imports and warms)."""
    small, large = (tmp_path / "small" / "results", tmp_path / "large" / "results")
    write_suite_sweep(small, 150, repeats=3, steps=20)
    write_suite_sweep(large, 300, repeats=3, steps=20)
    every_output(small)  # imports, caches
    ratio = cpu_seconds(large) / cpu_seconds(small)
    assert ratio < 3.0, f"x{ratio:.2f} for twice the cases"


def test_a_60_case_suite_page_is_at_most_5_mb_and_draws_the_cases_that_matter(tmp_path):
    root = tmp_path / "results"
    write_suite_sweep(root, 60, repeats=5, steps=1000, slower_share=0.1)  # 1,000 step rows a run
    page = every_output(root)
    assert len(page.encode()) <= 5 * 2**20, f"{len(page.encode()) / 2**20:.1f} MiB"
    report = make_report(root, SWEEP_ID)
    slower = [g.case for g in report.gates if g.verdict == "FAIL"]
    assert slower and all(f"<h2>{case}</h2>" in page for case in slower[:PLOTTED_CASES])
    assert page.count("<h2>benchmarks/") == PLOTTED_CASES and "more cases are not drawn here" in page
    assert "median of each 5" in page, "1,000 steps a run drawn as 200 medians"
