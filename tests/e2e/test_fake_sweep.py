"""A whole sweep on a real embedded LocalCluster with the fake bench at two commits."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "orchestrator"))
from fakebench.fakerepo import make_fake_repo, make_run  # noqa: E402

from orchestrator.dispatch.dispatcher import dispatch_runs  # noqa: E402

PARAMS = {"num_envs": 8, "warmup": 1, "measure": 8, "threads": 1}


@pytest.fixture
def repo(tmp_path, monkeypatch):
    monkeypatch.setenv("SHASWEEP_HOME", str(tmp_path / "home"))  # inherited by the worker process
    return make_fake_repo(tmp_path)


def test_interleaved_sweep_runs_serially_in_plan_order(tmp_path, repo):
    results = tmp_path / "results"
    plan = [make_run(repo, repo.shas[i % 2], order=i, results_root=results, params=PARAMS) for i in range(6)]
    outcome = dispatch_runs(plan, scheduler=None, continue_on_error=False, show_progress=False)

    assert not outcome.stopped_early and [o.status for o in outcome.runs] == ["ok"] * 6
    assert outcome.dashboard_url.startswith("http://127.0.0.1:")
    assert outcome.host["cpu_logical"] >= 1 and outcome.workers
    runs = pd.read_parquet(results / "runs").sort_values("started_at")
    assert runs["order"].tolist() == list(range(6)), "execution order is the plan order"
    starts, ends = runs["started_at"].tolist(), runs["ended_at"].tolist()
    assert all(start >= end for start, end in zip(starts[1:], ends[:-1], strict=True)), "runs overlapped"
    assert {"sweep_id", "run_key", "side", "sha", "status", "throughput", "physics_ms", "host_cpu_model",
            "audit_git_sha", "params", "env"} <= set(runs.columns)
    assert (runs["audit_git_sha"] == runs["sha"]).all()
    by_side = runs.groupby("side")["work_setting_ms"].unique()
    assert by_side.to_dict() == {"base": [4.0], "cand": [2.0]}, "each side ran its own commit's code"
    medians = runs.groupby("side")["throughput"].median()
    assert medians["cand"] > medians["base"]
    steps = pd.read_parquet(results / "steps")
    assert steps.groupby("run_key")["step"].nunique().eq(9).all()


def test_failure_stops_the_sweep_unless_continue_on_error(tmp_path, repo):
    results = tmp_path / "results"
    plan = [make_run(repo, repo.shas[i % 2], order=i, results_root=results, params=PARAMS,
                     extra_args=("--mode", "fail" if i == 1 else "ok")) for i in range(3)]
    stopped = dispatch_runs(plan, scheduler=None, continue_on_error=False, show_progress=True)
    assert stopped.stopped_early and "run #1" in stopped.stop_reason
    assert "unknown task 'fake'" in stopped.stop_reason
    assert [o.status for o in stopped.runs] == ["ok", "failed", "cancelled"]
    assert stopped.runs[2].error.startswith("not run")
    assert len(pd.read_parquet(results / "runs")) == 2

    continued = dispatch_runs(plan, scheduler=None, continue_on_error=True, show_progress=False)
    assert not continued.stopped_early
    assert [o.status for o in continued.runs] == ["ok", "failed", "ok"]
    assert len(pd.read_parquet(results / "runs")) == 3, "re-running a run key replaces, never duplicates"
