"""shasweep compare: two sweeps side by side: changes with intervals and verdicts, ratios A -> B, the
settings and software that differ."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from test_report import G1, GO2, write_run, write_sweep

from orchestrator.analysis.compare_model import load_comparison
from orchestrator.cli.main import main
from orchestrator.errors import EXIT_INVALID, EXIT_OK

EARLIER, LATER = "ab-20260101T000000", "ab-20260102T000000"


@pytest.fixture
def root(tmp_path):
    """Five runs per side: base 100 -> 90, cand 200 -> 300 throughput; cand physics 5 -> 4 ms."""
    write_sweep(tmp_path, EARLIER, [], [GO2], repeats=5)
    for i, (base, cand) in enumerate([(100.0, 200.0), (110.0, 220.0), (90.0, 180.0), (105.0, 210.0),
                                      (95.0, 190.0)]):
        write_run(tmp_path, EARLIER, f"b{i}", "base", GO2, throughput=base, physics_ms=10.0, d2h_ms=0.0)
        write_run(tmp_path, EARLIER, f"c{i}", "cand", GO2, throughput=cand, physics_ms=5.0, d2h_ms=0.0)
    write_sweep(tmp_path, LATER, [], [GO2, G1], repeats=5)
    for i, (base, cand) in enumerate([(90.0, 300.0), (100.0, 310.0), (80.0, 290.0), (95.0, 305.0),
                                      (85.0, 295.0)]):
        write_run(tmp_path, LATER, f"b{i}", "base", GO2, throughput=base, physics_ms=10.0)
        write_run(tmp_path, LATER, f"c{i}", "cand", GO2, throughput=cand, physics_ms=4.0)
        write_run(tmp_path, LATER, f"g{i}", "base", G1, throughput=5.0, physics_ms=1.0)
    return tmp_path


def test_changes_of_the_medians(root):
    comparison = load_comparison(root, EARLIER, LATER)
    assert comparison.cases == [GO2], "G1 is only in the later sweep"
    change = {(c.side, c.metric): c for c in comparison.changes}
    assert change["base", "throughput"].change_pct == pytest.approx(-10.0)
    assert change["cand", "throughput"].change_pct == pytest.approx(50.0)
    assert change["cand", "physics_ms"].change_pct == pytest.approx(-20.0)
    assert math.isnan(change["cand", "d2h_ms"].change_pct), "no d2h_ms in the later sweep"
    assert change["cand", "physics_ms"].verdict == "faster (large)", "a lower *_ms is faster"
    assert change["base", "throughput"].verdict == "no clear change"
    assert change["cand", "d2h_ms"].verdict == "no interval"
    ratio = {(r.side, r.metric): r for r in comparison.ratios}
    assert (ratio["cand", "throughput"].before.ratio, ratio["cand", "throughput"].after.ratio) == \
        pytest.approx((2.0, 300 / 90))


def test_a_change_needs_two_runs_a_side_for_an_interval():
    """Below ``MIN_RUNS`` ok runs in either sweep a change has no interval (and the verdict says so);
    from two on it has one, since the unpaired interval's coverage holds at n = 2."""
    from orchestrator.analysis.stats import MIN_RUNS, change_interval

    assert MIN_RUNS == 2
    assert math.isnan(change_interval([1.0], [1.0, 1.1]).low)
    found = change_interval([1.0, 1.05], [1.1, 1.12])
    assert found.low < found.high


def test_highlight_threshold(root):
    comparison = load_comparison(root, EARLIER, LATER, highlight_pct=60.0)
    change = {(c.side, c.metric): c for c in comparison.changes}
    assert change["cand", "throughput"].verdict == "faster", "clear, but +50% is under 60%"
    assert change["cand", "physics_ms"].verdict == "faster"


def test_settings_that_differ_are_named(root, capsys):
    path = root / "sweeps" / f"{LATER}.json"
    record = json.loads(path.read_text())
    record["spec"]["command"] = ["{python}", "bench.py", "--fast"]
    record["host"]["cpu_model"] = "Other CPU"
    for side in record["sides"].values():
        side["params"] = {"measure": 200, "num_envs": 8}
    record["sides"]["cand"]["env"] = {"OMP_PROC_BIND": "close"}
    path.write_text(json.dumps(record))
    earlier = root / "sweeps" / f"{EARLIER}.json"
    record = json.loads(earlier.read_text())
    for side in record["sides"].values():
        side["params"] = {"measure": 30, "num_envs": 8}
    earlier.write_text(json.dumps(record))
    html = root / "cmp.html"
    assert main(["compare", EARLIER, LATER, "--results", str(root), "--format", "html", "--out", str(html)]) \
        == EXIT_OK
    out = capsys.readouterr().out
    assert "## Warning: settings differ" in out
    page = html.read_text()
    assert '<p class="warning">The two sweeps ran with different settings' in page
    assert "<li>params.measure: 30 -&gt; 200</li>" in page
    for line in ("- params.measure: 30 -> 200", "- sides.cand.env.OMP_PROC_BIND: unset -> close",
                 "- host.cpu_model: Test CPU -> Other CPU"):
        assert line in out.splitlines(), line
    (command,) = [line for line in out.splitlines() if line.startswith("- command: ")]
    assert command.startswith("- command: {python} -m envruntime.bench --algo {algo}"), "the default"
    assert command.endswith(" -> {python} bench.py --fast")
    assert "pythonpath" not in out, "a record without pythonpath ran with the default"
    assert "sides.base.params.measure" not in out, "a difference every side shares is named once"


def test_cli_prints_markdown_and_writes_html(root, capsys):
    out = root / "cmp.html"
    assert main(["compare", EARLIER, "latest", "--results", str(root), "--format", "html",
                 "--out", str(out)]) == EXIT_OK
    printed = capsys.readouterr().out
    assert f"# shasweep compare: {LATER} vs. {EARLIER}" in printed
    assert "| cand | throughput | 200 [180, 220] cv 7.1% | 300 [290, 310] cv 2.4% | **+50.0%** | " \
           "**[+37.9%, +63.9%]** | **faster (large)** |" in printed
    assert "| base | throughput | 100 [90, 110] cv 7.1% | 90 [80, 100] cv 7.9% | -10.0% | " \
           "[-20.4%, +1.7%] | no clear change |" in printed
    assert "| cand | d2h_ms | 0 [0, 0] cv - | not reported | - | - | no interval |" in printed
    assert "| cand / base | throughput | 2.000 -> 3.333 | 95% CI [1.782, 2.245] | 95% CI [3.040, 3.676] |" \
        in printed
    assert "No package version differs" in printed and "Warning" not in printed
    page = out.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "<td>+50.0%</td>" in page
    assert '<td class="pass">faster (large)</td>' in page and "<td>2.000 -&gt; 3.333</td>" in page


def test_sweeps_without_a_common_case_are_invalid_input(root, capsys):
    other = "g1-20260103T000000"
    write_sweep(root, other, [], [G1])
    assert main(["compare", EARLIER, other, "--results", str(root)]) == EXIT_INVALID
    assert "share no case and side" in capsys.readouterr().err
    assert main(["compare", EARLIER, "nope-20260101T000000", "--results", str(root)]) == EXIT_INVALID


def simulated_verdicts(n: int, shift: float, sweeps: int, seed: int) -> list[str]:
    """The verdict of B's throughput against A's over ``sweeps`` simulated pairs of batches of ``n`` runs
    each, with 3% lognormal run-to-run noise and B's true median ``shift`` times A's."""
    from orchestrator.analysis import stats
    from orchestrator.analysis.compare_model import MetricChange
    from orchestrator.analysis.stats import change_interval

    rng = np.random.default_rng(seed)
    verdicts = []
    for _ in range(sweeps):
        before, after = rng.lognormal(0, 0.03, n), shift * rng.lognormal(0, 0.03, n)
        interval = change_interval(list(after), list(before))
        change = MetricChange(GO2, "cand", "throughput", stats.summarize(before), stats.summarize(after),
                              interval)
        verdicts.append(change.verdict)
    return verdicts


@pytest.mark.parametrize("n", [3, 5, 8])
def test_change_verdicts_false_alarm_rate_and_power(n):
    """Seeded simulations: with no real change, a 'faster'/'slower' verdict (the 95% interval missing
    1) comes up at most 8% of the time; a real +10% change is called 'faster (large)' at least 85%."""
    same = simulated_verdicts(n, 1.0, 250, seed=n)
    false_alarms = sum(v != "no clear change" for v in same) / len(same)
    assert false_alarms <= 0.08, f"A/A false-alarm rate {false_alarms:.1%} at n={n}"
    faster = simulated_verdicts(n, 1.10, 100, seed=100 + n)
    assert sum(v == "faster (large)" for v in faster) / len(faster) >= 0.85
