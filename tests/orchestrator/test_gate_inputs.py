"""A verdict's inputs are checked before anything runs: a gate or report metric the protocol does not
provide is bad input at ``plan`` (exit 2, the YAML key, the valid names, the nearest one); where only
the bench knows its metrics (v1), its first ok run decides and stops the sweep; a gate whose side has
no ok runs is NO DATA (exit 3), never FAIL."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
import yaml
from fakebench.fakerepo import COMMAND, make_fake_repo
from test_report import GO2, write_go2_runs, write_run, write_sweep

from orchestrator.analysis.report_model import load_runs, make_report
from orchestrator.analysis.verdicts import Verdict
from orchestrator.cli.main import main
from orchestrator.dispatch.adaptive import undecided_cells
from orchestrator.errors import EXIT_INVALID, EXIT_RUN_FAILED
from orchestrator.render.verdicts_json import verdicts_document
from orchestrator.spec.load import load_spec
from orchestrator.spec.schema import Spending
from orchestrator.store.records import read_record, write_record

JSON_SWEEP = {
    "name": "fmt", "sides": {"old": {"ref": "HEAD~1"}, "new": {"ref": "HEAD"}}, "baseline": "old",
    "cases": ["fmt"], "command": ["{python}", "bench.py", "{result}"], "protocol": "json",
    "json": {"throughput": "calls_per_s", "phases": {"format_ms": "format.ms", "parse_ms": "parse.ms"}},
    "gates": [{"metric": "format_ms", "max_ratio": 1.05}],
}


def make_adaptive(root, sweep_id: str, max_repeats: int) -> None:
    """The recorded sweep ``sweep_id`` with ``max_repeats`` (adaptive)."""
    record = read_record(root, sweep_id)
    write_record(root, replace(record, spec=replace(record.spec, max_repeats=max_repeats)))


def write_yaml(tmp_path, sweep: dict, **changes) -> str:
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump({**sweep, **changes}))
    return str(path)


@pytest.mark.parametrize(("changes", "key", "words"), [
    ({"gates": [{"metric": "fromat_ms", "max_ratio": 1.05}]}, "gates[0].metric",
     "'fromat_ms' is not reported by protocol json under this sweep's settings; valid: format_ms, parse_ms, "
     "throughput (did you mean 'format_ms'?)"),
    ({"gates": [{"metric": "format_ms", "max_ratio": 1.05}, {"metric": "thruput", "min_ratio": 0.9}]},
     "gates[1].metric", "valid: format_ms, parse_ms, throughput (did you mean 'throughput'?)"),
    ({"metrics": ["throughput", "parse_sm"]}, "metrics[1]", "(did you mean 'parse_ms'?)"),
    ({"protocol": "time", "json": None, "command": ["sleep", "0.01"], "params": {"measure": 2},
      "gates": [{"metric": "max_rss_mb", "max_ratio": 1.1}]}, "gates[0].metric",
     "not reported by protocol time under this sweep's settings; valid: cpu_ms, max_rss_mib, sys_ms, "
     "throughput, user_ms, wall_ms (did you mean 'max_rss_mib'?)"),
    ({"json": {"phases": {"format_ms": "format.ms"}}, "gates": [{"metric": "throughput", "min_ratio": 0.9}]},
     "gates[0].metric", "'throughput' is not reported by protocol json"),
    ({"json": {"phases": {"format_ms": "format.ms"}}, "gates": []}, "json",
     "maps no throughput and no phase or metric a gate checks, so nothing would be judged; map "
     "json.throughput, or gate one of: format_ms"),
])
def test_plan_refuses_a_metric_the_protocol_does_not_provide(tmp_path, capsys, changes, key, words):
    assert main(["plan", write_yaml(tmp_path, JSON_SWEEP, **changes)]) == EXIT_INVALID
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert f"{key}: " in line and words in line, line


@pytest.mark.parametrize(("gate", "changes", "key", "words"), [
    ({"within": 0}, {}, "gates[0].within", "must lie strictly between 0 and 1 (0.03: within 3% either way)"),
    ({"within": 1.0}, {}, "gates[0].within", "must lie strictly between 0 and 1"),
    ({"within": -0.03}, {}, "gates[0].within", "got -0.03"),
    ({"within": 0.03, "min_ratio": 0.97}, {}, "gates[0].within", "an equivalence gate has within alone"),
    ({"within": 0.03, "max_ratio": 1.03}, {}, "gates[0].within", "give within or min_ratio/max_ratio"),
    ({"within": 0.03, "confidence": 0.3}, {}, "gates[0].confidence", "needs a confidence above 0.333"),
    ({}, {}, "gates[0]", "needs min_ratio (higher is better), max_ratio (lower is better) or within"),
    ({"within": 0.03}, {"spending": "bonferroni"}, "spending", "Invalid value 'bonferroni'"),
])
def test_plan_refuses_a_bad_within_gate_or_spending(tmp_path, capsys, gate, changes, key, words):
    sweep = write_yaml(tmp_path, JSON_SWEEP, gates=[{"metric": "format_ms", **gate}], **changes)
    assert main(["plan", sweep]) == EXIT_INVALID
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"shasweep: error: {key}: ") and words in line, line


SUITE_SWEEP = {"name": "suite", "sides": {"old": {"ref": "HEAD~1"}, "new": {"ref": "HEAD"}},
               "baseline": "old", "cases": ["*"], "protocol": "pytest-benchmark",
               "command": ["{python}", "-m", "pytest", "--benchmark-json={result}"]}
CPU_GATE = [{"metric": "cpu_ms", "max_ratio": 1.05}]


@pytest.mark.parametrize(("sweep", "changes", "words"), [
    (SUITE_SWEEP, {}, "'cpu_ms' is not reported by protocol pytest-benchmark under this sweep's settings; "
                      "valid: throughput, time_ms; cpu_ms is measured by shasweep's suite channel, in order: "
                      "lockstep"),
    (SUITE_SWEEP, {"protocol": "gbench", "command": ["./bench", "--benchmark_out={result}"]},
     "valid: cpu_time_ms, throughput, time_ms (did you mean 'cpu_time_ms'?); cpu_ms comes from a bench that "
     "reports it per step"),
    (JSON_SWEEP, {}, "valid: format_ms, parse_ms, throughput; cpu_ms comes from a bench that reports it per "
                     "step (the bench helper, envruntime's bench), from protocol time (cpu_ms per measured "
                     "run), from a suite in order: lockstep, or from a json mapping that names it"),
])
def test_a_gate_on_cpu_ms_where_the_protocol_cannot_report_it_is_bad_input(tmp_path, capsys, sweep, changes,
                                                                         words):
    assert main(["plan", write_yaml(tmp_path, sweep, gates=CPU_GATE, **changes)]) == EXIT_INVALID
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("shasweep: error: gates[0].metric: ") and words in line, line


@pytest.mark.parametrize(("sweep", "changes"), [
    (SUITE_SWEEP, {"order": "lockstep"}),
    (SUITE_SWEEP, {"order": "lockstep", "protocol": "pyperf",
                   "command": ["{python}", "b.py", "-o", "{result}"],
                   "gates": [{"metric": "thread_cpu_ms", "within": 0.03}]}),
    (JSON_SWEEP, {"protocol": "time", "json": None, "command": ["sleep", "0.01"], "params": {"measure": 2}}),
    (JSON_SWEEP, {"json": {"throughput": "calls_per_s", "phases": {"cpu_ms": "cpu.ms"}}}),
])
def test_a_gate_on_cpu_ms_loads_where_the_protocol_reports_it(tmp_path, sweep, changes):
    spec = load_spec(write_yaml(tmp_path, sweep, **{"gates": CPU_GATE, **changes}))
    assert spec.gates[0].metric in ("cpu_ms", "thread_cpu_ms")


def test_a_within_gate_and_a_spending_name_load(tmp_path):
    spec = load_spec(write_yaml(tmp_path, JSON_SWEEP, gates=[{"metric": "format_ms", "within": 0.03}],
                                spending="obrien-fleming", max_repeats=10))
    assert spec.spending is Spending.obrien_fleming and spec.gates[0].bounds == [(">=", 0.97), ("<=", 1.03)]
    assert load_spec(write_yaml(tmp_path, JSON_SWEEP)).spending is Spending.pocock, "the default"


def test_a_json_mapping_without_throughput_is_judged_by_a_gate_on_a_mapped_phase(tmp_path):
    spec = load_spec(write_yaml(tmp_path, JSON_SWEEP, json={"phases": {"format_ms": "format.ms"}}))
    assert spec.json.throughput is None and [g.metric for g in spec.gates] == ["format_ms"]


@pytest.mark.slow
def test_a_v1_bench_whose_first_ok_run_lacks_a_gate_metric_stops_the_sweep(tmp_path, monkeypatch, capsys):
    """v1 declares no metric names, so ``fromat_ms`` passes plan; the first ok run shows the bench never
    reports it: the sweep stops before its next run, exit 2, the run it made kept and the record
    stopped with the reason."""
    monkeypatch.setenv("SHASWEEP_HOME", str(tmp_path / "home"))
    repo = make_fake_repo(tmp_path)
    monkeypatch.chdir(repo.path)
    sweep = {"name": "typo", "sides": {"old": {"ref": "HEAD~1"}, "new": {"ref": "HEAD"}}, "baseline": "old",
             "cases": ["sac/fake/none"], "known": {"tasks": [], "sims": []}, "command": list(COMMAND),
             "params": {"num_envs": 8, "warmup": 1, "measure": 3, "threads": 1}, "repeats": 3,
             "timeout_s": 60, "gates": [{"metric": "throughput", "min_ratio": 0.5},
                                        {"metric": "fromat_ms", "max_ratio": 1.1}]}
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(sweep))
    assert main(["plan", str(path)]) == 0
    capsys.readouterr()

    assert main(["run", str(path), "--no-progress"]) == EXIT_INVALID
    line = capsys.readouterr().err.strip().splitlines()[-1]  # after one progress line per finished run
    assert line.startswith("shasweep: error: gates[1].metric: 'fromat_ms' is not reported by the bench"), line
    assert "physics_ms" in line and "throughput" in line and "stopped before its next run" in line
    results = repo.path / "results"
    (record_path,) = (results / "sweeps").glob("typo-*.json")
    record = json.loads(record_path.read_text())
    assert record["status"] == "stopped" and "'fromat_ms' is not reported" in record["stopped_reason"]
    statuses = [o["status"] for o in record["outcomes"]]
    assert statuses == ["ok"] + ["cancelled"] * 5, "one run, then nothing"
    assert len(list((results / "runs").rglob("*.parquet"))) == 1, "the run it made is kept"


def test_no_data_is_its_own_verdict_count_and_exit_3(tmp_path):
    """All runs ok, but the candidate never reported the gated phase: NO DATA, not FAIL (exit 1)."""
    sweep = "ab-20260101T000000"
    gates = [{"metric": "physics_ms", "max_ratio": 1.0, "case": None, "side": None},
             {"metric": "throughput", "min_ratio": 1.5, "case": None, "side": None}]
    write_sweep(tmp_path, sweep, gates, [GO2])
    for i, value in enumerate((100.0, 110.0, 90.0)):
        write_run(tmp_path, sweep, f"b{i}", "base", GO2, throughput=value, physics_ms=10.0, repeat=i)
        write_run(tmp_path, sweep, f"c{i}", "cand", GO2, throughput=2 * value, repeat=i)
    report = make_report(tmp_path, sweep)
    assert [g.verdict for g in report.gates] == [Verdict.NO_DATA, Verdict.PASS]
    assert report.gates[0].empty_sides == ("cand",) and len(report.failures) == 0
    assert report.exit_code == EXIT_RUN_FAILED
    document = verdicts_document(report)
    assert document["counts"] == {"PASS": 1, "FAIL": 0, "INCONCLUSIVE": 0, "NO DATA": 1, "WAIVED": 0}
    assert document["verdict_line"] == "PASS 1 / FAIL 0 / INCONCLUSIVE 0 / NO DATA 1 — exit 3"
    assert [v["verdict"] for v in document["verdicts"]] == ["NO DATA", "PASS"]


def test_an_early_look_without_data_does_not_decide_an_adaptive_gate(tmp_path):
    """The candidate's first rounds failed and later ones ran: the later looks decide."""
    sweep = "ab-20260101T000000"
    write_sweep(tmp_path, sweep, [{"metric": "throughput", "min_ratio": 1.5, "case": None, "side": None}],
                [GO2], repeats=2)
    make_adaptive(tmp_path, sweep, 6)
    for i in range(6):
        write_run(tmp_path, sweep, f"b{i}", "base", GO2, throughput=100.0 + i % 2, repeat=i)
        ok = i >= 2
        write_run(tmp_path, sweep, f"c{i}", "cand", GO2, status="ok" if ok else "failed",
                  throughput=200.0 + i % 3 if ok else None, repeat=i)
    (gate,) = make_report(tmp_path, sweep).gates
    assert gate.verdict == Verdict.PASS and gate.looks > 1


def test_an_adaptive_sweep_adds_no_round_for_a_gate_without_data(tmp_path):
    sweep = "ab-20260101T000000"
    write_sweep(tmp_path, sweep, [{"metric": "physics_ms", "max_ratio": 1.0, "case": None, "side": None}],
                [GO2], repeats=3)
    make_adaptive(tmp_path, sweep, 6)
    write_go2_runs(tmp_path, sweep)
    runs = load_runs(tmp_path, sweep, ["physics_ms"]).assign(physics_ms=lambda f: f["physics_ms"].where(
        f["side"] == "base"))
    assert undecided_cells(read_record(tmp_path, sweep), runs) == {}
