"""``rerun_disturbed``: which runs are dispatched again, once, and how the dispatcher takes a re-run."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import yaml
from fakebench.fakerepo import make_fake_repo, make_run

from orchestrator.contract import HostRecord, RunResult
from orchestrator.dispatch.adaptive import DisturbedReruns
from orchestrator.dispatch.dispatcher import dispatch_runs
from orchestrator.plan.expand import build_plan, resolve_sweep
from orchestrator.plan.lifecycle import new_record
from orchestrator.spec.load import load_spec
from orchestrator.store.parquet import write_run

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def test_disturbed_ok_runs_are_rerun_once(tmp_path, monkeypatch):
    repo = make_fake_repo(tmp_path)
    monkeypatch.chdir(repo.path)
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump({"name": "rr", "sides": {"a": {"ref": "HEAD~1"}, "b": {"ref": "HEAD"}},
                                    "baseline": "a", "cases": ["sac/go2_joystick_flat/mujoco"], "repeats": 2,
                                    "rerun_disturbed": True}))
    resolved = resolve_sweep(load_spec(path), Path.cwd())
    runs = build_plan(resolved, "rr-1")
    record = new_record(resolved, "rr-1", NOW, len(runs))
    loads = [1.0, 64.0, 1.0, 64.0]  # runs 1 and 3 ran on a host with far more load than CPUs
    for run, load in zip(runs, loads, strict=True):
        status = "failed" if run.order == 3 else "ok"  # a failed run is not a disturbed one
        host = HostRecord(cpu_logical=2, load_before=load, load_after=1.0)
        write_run(run, RunResult(status=status, error=None, started_at=NOW, ended_at=NOW, exit_code=0,
                                 log_dir="", host=host))
    reruns = DisturbedReruns(resolved, record, runs)
    assert [r.order for r in reruns()] == [1]
    assert reruns() == [], "once"
    assert DisturbedReruns(resolved, record, runs, done={runs[1].run_key})() == [], (
        "a run ok before a resume is not this dispatch's to re-run")


def test_a_rerun_replaces_the_run_and_its_outcome(tmp_path, monkeypatch):
    monkeypatch.setenv("SHASWEEP_HOME", str(tmp_path / "home"))
    repo = make_fake_repo(tmp_path)
    results = tmp_path / "results"
    plan = [make_run(repo, repo.shas[i % 2], order=i, results_root=results) for i in range(2)]
    asked: list[int] = []

    def more():
        asked.append(1)
        return [plan[0]] if len(asked) == 1 else []

    outcome = dispatch_runs(plan, scheduler=None, continue_on_error=False, show_progress=False, more=more)
    assert len(asked) == 2 and [o.run_key for o in outcome.runs] == [plan[0].run_key, plan[1].run_key]
    rows = pd.read_parquet(results / "runs")
    assert len(rows) == 2 and rows["run_key"].is_unique
    first = rows.set_index("run_key").loc[plan[0].run_key, "started_at"]
    assert first > rows.set_index("run_key").loc[plan[1].run_key, "started_at"], "run 0 ran again last"
    assert outcome.runs[0].started_at == first.isoformat(), "the outcome is the re-run's"

