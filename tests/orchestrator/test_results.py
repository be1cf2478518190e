"""Writing runs and steps as Parquet: atomic, replace on re-run, readable by pandas."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pandas as pd
import pyarrow.parquet as pq
import pytest

from orchestrator.contract import PlannedRun, StepRecord
from orchestrator.store import parquet as results
from orchestrator.store.parquet import RunResult, write_run
from orchestrator.store.query import Where, read_runs
from orchestrator.worker.hostinfo import collect_host

DOCUMENTED = ["sweep_id", "run_key", "side", "ref", "sha", "case", "algo", "task", "sim", "variant", "repeat",
              "order", "status", "error", "started_at", "ended_at", "wall_s", "throughput", "physics_ms",
              "host_cpu_model", "host_gpu_name", "audit_git_sha", "audit_module_file", "params", "env"]


def planned(tmp_path, key: str, sweep: str = "s1") -> PlannedRun:
    return PlannedRun(sweep_id=sweep, run_key=key, order=0, side="base", ref="main", sha="a" * 40,
                      case="sac/g1_walk_flat/mujoco", algo="sac", task="g1_walk_flat", sim="mujoco",
                      variant="manager", repeat=0, repo="/nowhere", argv_template=("{python}",),
                      params={"num_envs": 8}, env={"X": "1"}, results_root=str(tmp_path / "results"))


def outcome(status: str = "ok", throughput: float | None = 100.0,
            extra_phase: str | None = None) -> RunResult:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    means = {"physics_ms": 2.0, **({extra_phase: 0.5} if extra_phase else {})}
    return RunResult(
        status=status, error=None if status == "ok" else "boom", started_at=start,
        ended_at=start + timedelta(seconds=3), exit_code=0 if status == "ok" else 1, log_dir="/logs",
        host=collect_host(),
        header={"audit": {"git_sha": "a" * 40, "module_file": "/x/__init__.py", "managers": ["a", "b"],
                          "versions": {"numpy": "2"}}},
        summary={"throughput": throughput, "phase_means_ms": means} if throughput is not None else None,
        steps=[StepRecord(0, True, {"physics_ms": 3.0}),
               StepRecord(1, False, {"physics_ms": 2.0, "x_ms": 1.0})],
    )


def test_run_row_columns_and_types(tmp_path):
    files = write_run(planned(tmp_path, "r1"), outcome())
    row = pd.read_parquet(files.runs).iloc[0]
    assert row["throughput"] == 100.0 and row["physics_ms"] == 2.0 and row["wall_s"] == 3.0
    assert pd.isna(row["policy_ms"]), "standard phases a run does not report are null, not missing"
    assert row["audit_managers"] == '["a", "b"]' and row["audit_versions"] == '{"numpy": "2"}'
    assert row["params"] == '{"num_envs": 8}' and row["env"] == '{"X": "1"}'
    steps = pd.read_parquet(files.steps)
    assert list(steps.columns) == ["sweep_id", "run_key", "step", "warmup", "phase", "ms"]
    assert steps[["step", "phase", "ms"]].values.tolist() == [[0, "physics_ms", 3.0], [1, "physics_ms", 2.0],
                                                              [1, "x_ms", 1.0]]


def test_pandas_reads_the_runs_root_across_sweeps_and_statuses(tmp_path):
    write_run(planned(tmp_path, "r1", "s1"), outcome())
    write_run(planned(tmp_path, "r2", "s1"), outcome(status="failed", throughput=None))
    write_run(planned(tmp_path, "r3", "s2"), outcome(extra_phase="update_state.command.compute_ms"))
    df = pd.read_parquet(tmp_path / "results" / "runs")
    assert set(DOCUMENTED) <= set(df.columns)
    assert sorted(df["run_key"]) == ["r1", "r2", "r3"]
    assert df["throughput"].dtype == "float64"
    assert df.set_index("run_key").sort_index()["error"].isna().tolist() == [True, False, True]
    assert sorted(df["sweep"].astype(str).unique()) == ["s1", "s2"]
    # the manager breakdown survives a directory read whose first file lacks it
    assert df.set_index("run_key")["update_state.command.compute_ms"].fillna(-1).to_dict() == {
        "r1": -1, "r2": -1, "r3": 0.5}
    union = read_runs(tmp_path / "results")
    assert union.set_index("run_key")["update_state.command.compute_ms"].fillna(-1).to_dict() == {
        "r1": -1, "r2": -1, "r3": 0.5}
    assert sorted(read_runs(tmp_path / "results", Where(sweeps=["s2"]))["run_key"]) == ["r3"]


def test_rerun_replaces_and_never_leaves_temporaries(tmp_path):
    run = planned(tmp_path, "r1")
    write_run(run, outcome(throughput=1.0))
    files = write_run(run, outcome(throughput=2.0))
    df = pd.read_parquet(tmp_path / "results" / "runs")
    assert df["throughput"].tolist() == [2.0]
    assert [p.name for p in files.runs.parent.iterdir()] == ["r1.parquet"]


def test_failed_write_keeps_the_previous_file(tmp_path, monkeypatch):
    run = planned(tmp_path, "r1")
    files = write_run(run, outcome(throughput=1.0))

    def broken_write(table, path, options):
        with open(path, "wb") as f:
            f.write(b"PAR1 half a file")
        raise OSError("disk full")

    monkeypatch.setattr(results, "write_table", broken_write)
    with pytest.raises(OSError, match="disk full"):
        write_run(run, outcome(throughput=2.0))
    assert pq.read_table(files.runs).column("throughput").to_pylist() == [1.0]
    assert sorted(p.name for p in files.runs.parent.iterdir()) == ["r1.parquet"]
