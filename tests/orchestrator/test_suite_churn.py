"""A suite whose candidate adds two benchmarks and removes one: the cases on one side only are
``added`` or ``removed``, listed in every output and never gated (no NO DATA, no exit 3, no hint to
resume runs that were all ok), the geometric mean covers the common cases and says how many; and the
suite process's own figures (CPU time, peak RSS) are reported per suite run, not per case, and
compared only where both sides ran the same benchmarks. For separate processes per side and round
and for lockstep rounds alike (a lockstep case leaves rows only on the sides that ran it)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from rich.console import Console
from suite_sweeps import SuiteSweep

from orchestrator.analysis.report_model import make_report
from orchestrator.cli.main import main
from orchestrator.errors import EXIT_GATE_FAILED, EXIT_OK
from orchestrator.render.bmf import bmf_document
from orchestrator.render.gh_summary import gh_markdown
from orchestrator.render.junit import junit_xml
from orchestrator.render.markdown import report_markdown
from orchestrator.render.terminal import render_report, report_verdict_line
from orchestrator.render.verdicts_json import verdicts_document
from orchestrator.session.recorded import SweepRun
from orchestrator.session.reports import write_sweep_html

SWEEP = "churn-20260101T000000"
COMMON = ["checksum", "tokenize"]
OLD = [*COMMON, "sort_words"]
NEW = [*COMMON, "count_words", "hash_words"]
ADDED, REMOVED = ["count_words", "hash_words"], ["sort_words"]


def time_ms(slowed: str | None = None):
    """Seeded per-run noise (1 %) around 1 ms per call; ``slowed`` is 30 % slower at new."""
    rng = np.random.default_rng(11)
    draws: dict[tuple[str, str, int], float] = {}

    def value(case: str, side: str, r: int) -> float:
        if (case, side, r) not in draws:
            factor = 1.3 if side == "new" and case == slowed else 1.0
            draws[case, side, r] = factor * float(np.exp(rng.normal(0, 0.01)))
        return draws[case, side, r]
    return value


@pytest.fixture(params=["interleaved", "lockstep"])
def churned(request, tmp_path):
    """The root of a sweep whose new side added two benchmarks and removed one."""
    SuiteSweep(SWEEP, {"old": OLD, "new": NEW}, time_ms(), spec={"order": request.param}).write(tmp_path)
    return tmp_path


def terminal(report, width: int = 120) -> str:
    console = Console(width=width, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(render_report(report, width))
    return console.export_text()


def test_one_sided_cases_are_added_or_removed_and_not_gated(churned):
    report = make_report(churned, SWEEP)
    assert report.one_sided["new"].added == tuple(ADDED) and report.one_sided["new"].removed == tuple(REMOVED)
    assert {g.case for g in report.gates} == set(COMMON), "only the common cases are gated"
    assert all(g.verdict == "PASS" for g in report.gates)
    assert report.exit_code == EXIT_OK, "exit by the gates alone: no NO DATA, no exit 3"
    (suite,) = report.suites
    assert suite.common == 2 and suite.rounds == 4 and np.isfinite(suite.geomean)
    assert suite.low < suite.geomean < suite.high


def test_every_output_lists_them(churned):
    report = make_report(churned, SWEEP)
    text = terminal(report)
    assert "geometric mean, 2 of 5 cases" in text
    listed = ("added at new (2, on one side only: not gated, not in the geometric mean): "
              "count_words, hash_words")
    assert listed in " ".join(text.split())
    assert "NO DATA" not in text
    assert report_verdict_line(report) == ("PASS 2 / FAIL 0 / INCONCLUSIVE 0 — exit 0 "
                                           "(2 case(s) added, 1 removed: not gated)")
    markdown = report_markdown(report)
    removed_row = next(line for line in markdown.splitlines() if line.startswith("| sort_words |"))
    assert removed_row.endswith("| - | - | - | removed |"), removed_row
    assert "## Added and removed cases" in markdown and "removed at new (1" in markdown
    html = write_sweep_html(SweepRun(SWEEP, churned), report).read_text(encoding="utf-8")
    assert "added at new (2" in html and "geometric mean (2 common cases of 5" in html
    gh = gh_markdown(report)
    assert "added at new (2" in gh and "| count_words | new | time_ms | - |" in gh
    junit = ET.fromstring(junit_xml(report))
    skipped = {case.get("name"): case.find("skipped").get("type")
               for case in junit.iter("testcase") if case.find("skipped") is not None}
    assert skipped == {"count_words [new] added": "shasweep.added",
                       "hash_words [new] added": "shasweep.added",
                       "sort_words [new] removed": "shasweep.removed"}
    assert junit.find("testsuite").get("failures") == "0"
    document = json.loads(json.dumps(verdicts_document(report)))
    assert document["added"] == [{"case": c, "side": "new"} for c in ADDED]
    assert document["removed"] == [{"case": "sort_words", "side": "new"}]
    assert document["counts"]["NO DATA"] == 0 and document["exit_code"] == EXIT_OK
    bmf = bmf_document(report)
    assert set(bmf) == {*COMMON, *ADDED}, "an added case has its medians; a removed one has no number at new"
    assert "time_ms-ratio" not in bmf["count_words"] and "time_ms-ratio" in bmf["checksum"]


def test_the_sweep_exits_by_its_gates_and_no_resume_hint_when_every_run_was_ok(tmp_path, capsys):
    SuiteSweep(SWEEP, {"old": OLD, "new": NEW}, time_ms(slowed="tokenize")).write(tmp_path)
    assert main(["report", SWEEP, "--results", str(tmp_path)]) == EXIT_GATE_FAILED
    from orchestrator.session.reports import show_report

    assert show_report(SweepRun(SWEEP, tmp_path), resume_hint=True) == EXIT_GATE_FAILED
    out = capsys.readouterr().out
    assert "--resume" not in out and "NO DATA" not in out


def test_the_suite_process_figures_are_per_suite_run_and_not_compared_across_other_benchmarks(churned):
    report = make_report(churned, SWEEP)
    assert not {"bench_user_s", "bench_sys_s", "bench_max_rss_mib"} & set(report.metrics), "not per case"
    bmf = bmf_document(report)
    assert all(not any(m.startswith("bench_") for m in measures) for measures in bmf.values())
    figures = {(f.side, f.metric): f for f in report.processes}
    old, new = figures["old", "bench_user_s"], figures["new", "bench_user_s"]
    assert (old.runs, new.runs) == (4, 4), "one value per suite run, not one per case"
    assert (old.summary.median, new.summary.median) == (pytest.approx(1.5), pytest.approx(2.0))
    assert new.comparison is None and "2 added, 1 removed" in new.not_compared
    assert "new / old not compared: the sides ran different benchmarks (2 added, 1 removed)" in " ".join(
        terminal(report).split())
    assert "## Suite process" in report_markdown(report)


def test_the_suite_process_figures_are_compared_when_both_sides_ran_the_same_benchmarks(tmp_path):
    SuiteSweep(SWEEP, {"old": OLD, "new": OLD}, time_ms()).write(tmp_path)
    report = make_report(tmp_path, SWEEP)
    assert report.one_sided == {"new": report.one_sided["new"]} and not report.one_sided["new"]
    user = next(f for f in report.processes if f.side == "new" and f.metric == "bench_user_s")
    assert user.comparison is not None and user.comparison.n_candidate == 4
    assert user.comparison.ratio == pytest.approx(1.0)
