"""Disturbed runs: the host samples around the measured window, the /sys CPU settings, and which
runs the report flags."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from fakebench.fakerepo import make_fake_repo, make_run

from orchestrator.analysis.disturbed import disturbed_reasons, disturbed_runs
from orchestrator.contract import StepRecord
from orchestrator.store.step_log import StepLog
from orchestrator.worker.bench_task import execute_run
from orchestrator.worker.disturbance import MeasureWindow, cpu_sample, cpu_settings


def fake_proc(path, steal: int, total_rest: int, load: float) -> None:
    path.mkdir(exist_ok=True)
    # user nice system idle iowait irq softirq steal guest guest_nice
    (path / "stat").write_text(f"cpu  {total_rest} 0 0 0 0 0 0 {steal} 0 0\ncpu0 1 2 3\n")
    (path / "loadavg").write_text(f"{load} 0.50 0.40 1/100 1234\n")


def test_the_window_spans_the_measured_steps(tmp_path):
    proc = tmp_path / "proc"
    fake_proc(proc, steal=0, total_rest=50, load=9.0)
    window = MeasureWindow(proc)  # made as the bench starts
    fake_proc(proc, steal=0, total_rest=100, load=9.0)
    window.observe({"kind": "header"})
    fake_proc(proc, steal=10, total_rest=1000, load=0.5)
    window.observe({"kind": "step", "warmup": True})  # the latest sample before measuring counts
    fake_proc(proc, steal=99, total_rest=5000, load=7.0)
    window.observe({"kind": "step", "warmup": False})
    window.observe({"kind": "step", "warmup": True})  # not a warm-up any more once measuring began
    fake_proc(proc, steal=60, total_rest=1800, load=2.5)
    window.observe({"kind": "summary"})
    columns = window.columns(StepLog())
    assert columns["steal_frac"] == pytest.approx(50 / 850)
    assert (columns["load_before"], columns["load_after"]) == (0.5, 2.5)


def test_without_proc_everything_is_unknown(tmp_path):
    assert cpu_sample(tmp_path / "absent") is None
    window = MeasureWindow(tmp_path / "absent")
    window.observe({"kind": "header"})
    window.observe({"kind": "summary"})
    assert set(window.columns(StepLog()).values()) == {None}


def test_step_cv_uses_the_whole_step_phase_or_the_top_level_sum():
    steps = [StepRecord(0, True, {"env_step_ms": 100.0})] + [
        StepRecord(i, False, {"env_step_ms": ms, "physics_ms": 1.0})
        for i, ms in enumerate([9.0, 10.0, 11.0], 1)]
    assert StepLog(steps).step_cv() == pytest.approx(1.0 / 10.0), "warm-up left out; std (ddof 1) / mean"
    flat = [StepRecord(i, False, {"a_ms": 1.0, "b_ms": ms, "b.sub_ms": 50.0})
            for i, ms in enumerate([1.0, 3.0])]
    assert StepLog(flat).step_cv() == pytest.approx(math.sqrt(2) / 3), \
        "sub-phases (with a dot) are inside their parent"
    assert StepLog(steps[:2]).step_cv() is None
    partial = steps + [StepRecord(4, False, {"physics_ms": 2.0})]  # one measured step without env_step_ms
    sums = [10.0, 11.0, 12.0, 2.0]
    mean = sum(sums) / 4
    expected = math.sqrt(sum((x - mean) ** 2 for x in sums) / 3) / mean
    assert StepLog(partial).step_cv() == pytest.approx(expected), "the whole step only when every step has it"


def test_cpu_settings_from_sys_and_none_where_absent(tmp_path):
    sys_cpu = tmp_path / "cpu"
    for cpu, governor in ((0, "performance"), (1, "powersave")):
        (sys_cpu / f"cpu{cpu}" / "cpufreq").mkdir(parents=True)
        (sys_cpu / f"cpu{cpu}" / "cpufreq" / "scaling_governor").write_text(governor + "\n")
    (sys_cpu / "intel_pstate").mkdir()
    (sys_cpu / "intel_pstate" / "no_turbo").write_text("1\n")
    (sys_cpu / "isolated").write_text("2-3\n")
    assert cpu_settings({0, 1}, sys_cpu) == {"cpu_governor": "performance,powersave", "cpu_turbo": "off",
                                             "isolated_cpus": "2-3"}
    assert cpu_settings({0}, tmp_path / "none") == {"cpu_governor": None, "cpu_turbo": None,
                                                    "isolated_cpus": None}


def test_flagged_runs_and_why():
    runs = pd.DataFrame({
        "run_key": list("abcdef"), "case": ["c"] * 6, "side": ["s"] * 5 + ["t"], "repeat": range(6),
        "host_cpu_logical": [4] * 6,
        "host_steal_frac": [0.0, 0.2, 0.0, 0.0, None, 0.0],
        "host_load_before": [1.0, 1.0, 6.5, 1.0, 1.0, 1.0], "host_load_after": [1.0] * 6,
        "host_step_cv": [0.01, 0.01, 0.01, 0.05, 0.012, 0.05],
    })
    reasons = disturbed_reasons(runs).tolist()
    assert reasons[0] is None and reasons[4] is None and reasons[5] is None, "t's CV is its own median"
    assert reasons[1] == "CPU steal 20%" and reasons[2] == "load 6.5 on 4 CPUs"
    assert reasons[3].startswith("step-time CV 5.0% vs cell median 1.0%")
    assert disturbed_runs(runs)["run_key"].tolist() == ["b", "c", "d"]
    assert disturbed_runs(runs.drop(columns=["host_steal_frac", "host_step_cv"]))["run_key"].tolist() == ["c"]


def test_a_real_run_records_the_window(tmp_path, monkeypatch):
    monkeypatch.setenv("SHASWEEP_HOME", str(tmp_path / "home"))
    repo = make_fake_repo(tmp_path)
    outcome = execute_run(make_run(repo, repo.shas[0], results_root=tmp_path / "results",
                                   params={"num_envs": 8, "warmup": 1, "measure": 4, "threads": 1}))
    row = pd.read_parquet(outcome.runs_file).iloc[0]
    assert 0 <= row["host_steal_frac"] <= 1 and row["host_load_before"] >= 0 and row["host_load_after"] >= 0
    assert row["host_step_cv"] >= 0
    assert {"host_cpu_governor", "host_cpu_turbo", "host_isolated_cpus"} <= set(row.index)


def test_the_report_lists_disturbed_runs_and_the_adaptive_rounds(tmp_path):
    from test_report import GO2, write_run, write_sweep

    from orchestrator.analysis.report_model import make_report
    from orchestrator.render.markdown import report_markdown

    sweep = "ab-20260101T000000"
    gate = {"metric": "throughput", "min_ratio": 0.5, "case": None, "side": None}
    adaptive = {"repeats": 3, "max_repeats": 8, "rounds": 3, "ended": "every gate decided"}
    write_sweep(tmp_path, sweep, [gate], [GO2], adaptive=adaptive)
    for i, load in enumerate([0.5, 12.0, 0.7]):
        for side in ("base", "cand"):
            write_run(tmp_path, sweep, f"{side}{i}", side, GO2, throughput=100.0 + i, host_cpu_logical=2,
                      host_load_before=load, host_load_after=0.5, host_steal_frac=0.0, host_step_cv=0.01)
    report = make_report(tmp_path, sweep)
    assert sorted(report.disturbed["run_key"]) == ["base1", "cand1"]
    md = report_markdown(report)
    assert "## Disturbed runs" in md and "| load 12.0 on 2 CPUs |" in md
    assert "2 disturbed" in md and "adaptive: 3 of 3-8 rounds, ended: every gate decided" in md


def test_records_read_all_at_once_still_have_the_window_from_the_start(tmp_path):
    proc = tmp_path / "proc"
    fake_proc(proc, steal=0, total_rest=100, load=1.0)
    window = MeasureWindow(proc)
    fake_proc(proc, steal=30, total_rest=400, load=3.0)  # the bench ran; nothing was read meanwhile
    for record in ({"kind": "header"}, {"kind": "step", "warmup": True}, {"kind": "step", "warmup": False},
                   {"kind": "summary"}):
        window.observe(record)
    assert window.columns(StepLog())["steal_frac"] == pytest.approx(30 / 330)
