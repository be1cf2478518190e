"""shasweep compare: medians of two sweeps side by side with the change in percent."""

from __future__ import annotations

import math

import pytest
from test_report import G1, GO2, write_go2_runs, write_run, write_sweep

from orchestrator.cli.main import main
from orchestrator.errors import EXIT_INVALID, EXIT_OK
from orchestrator.render.compare import make_comparison

EARLIER, LATER = "ab-20260101T000000", "ab-20260102T000000"


@pytest.fixture
def root(tmp_path):
    write_sweep(tmp_path, EARLIER, [], [GO2])
    write_go2_runs(tmp_path, EARLIER)  # base 100 / cand 200 throughput
    write_sweep(tmp_path, LATER, [], [GO2, G1])
    for i, (base, cand) in enumerate([(90.0, 300.0), (100.0, 310.0), (80.0, 290.0)]):
        write_run(tmp_path, LATER, f"b{i}", "base", GO2, throughput=base, physics_ms=10.0)
        write_run(tmp_path, LATER, f"c{i}", "cand", GO2, throughput=cand, physics_ms=4.0)
        write_run(tmp_path, LATER, f"g{i}", "base", G1, throughput=5.0, physics_ms=1.0)
    return tmp_path


def test_changes_of_the_medians(root):
    comparison = make_comparison(root, EARLIER, LATER)
    assert comparison.cases == [GO2], "G1 is only in the later sweep"
    change = {(c.side, c.metric): c for c in comparison.changes}
    assert change["base", "throughput"].change_pct == pytest.approx(-10.0)
    assert change["cand", "throughput"].change_pct == pytest.approx(50.0)
    assert change["cand", "physics_ms"].change_pct == pytest.approx(-20.0)
    assert math.isnan(change["cand", "d2h_ms"].change_pct), "no d2h_ms in the later sweep"


def test_cli_prints_markdown_and_writes_html(root, capsys):
    out = root / "cmp.html"
    assert main(["compare", EARLIER, "latest", "--results", str(root), "--format", "html",
                 "--out", str(out)]) == EXIT_OK
    printed = capsys.readouterr().out
    assert f"# shasweep compare: {LATER} vs. {EARLIER}" in printed
    assert "| cand | throughput | 200 [180, 220] cv 8.2% | 300 [290, 310] cv 2.7% | +50.0% |" in printed
    page = out.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "<td>+50.0%</td>" in page


def test_sweeps_without_a_common_case_are_invalid_input(root, capsys):
    other = "g1-20260103T000000"
    write_sweep(root, other, [], [G1])
    assert main(["compare", EARLIER, other, "--results", str(root)]) == EXIT_INVALID
    assert "share no case and side" in capsys.readouterr().err
    assert main(["compare", EARLIER, "nope-20260101T000000", "--results", str(root)]) == EXIT_INVALID
