"""An equivalence gate (``within: 0.03``) through every output: its verdicts on a hand-made results root,
the interval each claim reads, and the same bound, verdict and interval in the terminal report,
Markdown, HTML, verdicts.json, the verdict line, JUnit, the GitHub summary and BMF; and the adaptive
loop's undecided cells."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from test_report import write_run, write_sweep

from orchestrator.analysis.report_model import load_runs, make_report
from orchestrator.analysis.verdicts import Verdict, format_interval
from orchestrator.cli.main import main
from orchestrator.dispatch.adaptive import undecided_cells
from orchestrator.errors import EXIT_GATE_FAILED
from orchestrator.store.records import read_record

SWEEP = "eq-20260101T000000"
BOUND = "within [0.97x, 1.03x]"
# case -> the candidate's throughput against the baseline's and the run noise (log s.d.)
CASES = {"sac/same/none": (1.0, 0.003), "sac/faster/none": (1.10, 0.003), "sac/noisy/none": (1.0, 0.05)}


@pytest.fixture
def root(tmp_path):
    """Six interleaved rounds of three cases with a within gate, values drawn with a fixed seed."""
    rng = np.random.default_rng(3)
    write_sweep(tmp_path, SWEEP, [{"metric": "throughput", "within": 0.03}], list(CASES), repeats=6)
    for number, (case, (ratio, noise)) in enumerate(CASES.items()):
        for r in range(6):
            for side, factor in (("base", 1.0), ("cand", ratio)):
                write_run(tmp_path, SWEEP, f"{side}{number}{r}", side, case,
                          throughput=100 * factor * float(np.exp(rng.normal(0, noise))))
    return tmp_path


def test_a_within_gate_passes_inside_fails_outside_and_reads_a_narrower_interval_to_pass(root):
    report = make_report(root, SWEEP)
    gates = {g.case: g for g in report.gates}
    assert {case: g.verdict for case, g in gates.items()} == {"sac/same/none": Verdict.PASS,
                                                             "sac/faster/none": Verdict.FAIL,
                                                             "sac/noisy/none": Verdict.INCONCLUSIVE}
    assert all(g.bound == BOUND for g in gates.values())
    assert gates["sac/same/none"].comparison.confidence == pytest.approx(1 - 1.5 * 0.05), "PASS: 3/4 of alpha"
    for case in ("sac/faster/none", "sac/noisy/none"):
        assert gates[case].comparison.confidence == pytest.approx(1 - 0.5 * 0.05), "FAIL: the rest"
    same, faster = gates["sac/same/none"].comparison, gates["sac/faster/none"].comparison
    assert 0.97 <= same.low <= same.high <= 1.03 and faster.low > 1.03
    assert "entirely > 1.03" in gates["sac/faster/none"].reason
    assert "straddles" in gates["sac/noisy/none"].reason
    assert report.exit_code == EXIT_GATE_FAILED


def test_every_output_shows_the_within_gates_bound_verdict_and_decided_interval(root, capsys):
    report = make_report(root, SWEEP)
    intervals = [format_interval(g.comparison) for g in report.gates]
    assert main(["report", SWEEP, "--results", str(root), "--format", "html"]) == EXIT_GATE_FAILED
    terminal = capsys.readouterr().out
    assert "PASS 1 / FAIL 1 / INCONCLUSIVE 1" in terminal and "within" in terminal
    markdown = (root / "reports" / f"{SWEEP}.md").read_text()
    page = (root / "reports" / f"{SWEEP}.html").read_text()
    assert all(BOUND in text and all(i in text for i in intervals) for text in (markdown, page))
    document = json.loads((root / "reports" / f"{SWEEP}.verdicts.json").read_text())
    assert [(v["bound"], v["verdict"], v["confidence"]) for v in document["verdicts"]] == [
        (BOUND, g.verdict, g.comparison.confidence) for g in report.gates]
    assert document["verdict_line"].startswith("PASS 1 / FAIL 1 / INCONCLUSIVE 1")

    assert main(["report", SWEEP, "--results", str(root), "--format", "junit"]) == EXIT_GATE_FAILED
    cases = ET.fromstring(capsys.readouterr().out).iter("testcase")
    failed = [c for c in cases if c.find("failure") is not None]
    assert len(failed) == 1 and BOUND in failed[0].get("name")
    assert f"outside {BOUND}" in failed[0].find("failure").get("message")
    assert main(["report", SWEEP, "--results", str(root), "--format", "gh"]) == EXIT_GATE_FAILED
    gh = capsys.readouterr().out
    assert "PASS 1 / FAIL 1 / INCONCLUSIVE 1" in gh and all(v in gh for v in ("PASS", "FAIL", "INCONCLUSIVE"))
    assert main(["report", SWEEP, "--results", str(root), "--format", "bmf"]) == EXIT_GATE_FAILED
    assert set(json.loads(capsys.readouterr().out)) == set(CASES)


def test_the_adaptive_loop_adds_rounds_only_for_an_undecided_within_gate(root):
    runs = load_runs(root, SWEEP, ["throughput"])
    assert undecided_cells(read_record(root, SWEEP), runs) == {("sac/noisy/none", "cand"): {"throughput"},
                                                                ("sac/noisy/none", "base"): {"throughput"}}
