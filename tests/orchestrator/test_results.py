"""Writing runs and steps as Parquet: atomic, replace on re-run, readable by pandas."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pandas as pd
import pyarrow.parquet as pq
import pytest

from orchestrator.contract import PlannedRun, RunResult, StepRecord
from orchestrator.store import parquet as results
from orchestrator.store.parquet import write_run
from orchestrator.store.query import Where, read_runs
from orchestrator.store.step_log import StepLog
from orchestrator.worker.hostinfo import collect_host

# what a foreign bench's run (a command without {variant}, a case without parts, neither lockstep nor
# quiet nor a suite, measured in its sweep) has none of: its row has no such column
NOT_ITS_OWN = ("variant", "algo", "task", "sim", "reused_from", "suite_run_key", "bad_input",
               "audit_modules", "ran_in", "lockstep_fallback", "blocks", "quiet_wait_s", "quiet_load",
               "quiet_steal", "quiet_met")
DOCUMENTED = ["sweep_id", "run_key", "side", "ref", "sha", "case", "algo", "task", "sim", "variant", "repeat",
              "order", "status", "error", "started_at", "ended_at", "wall_s", "throughput", "physics_ms",
              "host_cpu_model", "host_gpu_name", "audit_git_sha", "audit_module_file", "params", "env"]


def planned(tmp_path, key: str, sweep: str = "s1") -> PlannedRun:
    return PlannedRun(sweep_id=sweep, run_key=key, order=0, side="base", ref="main", sha="a" * 40,
                      case="sac/g1_walk_flat/mujoco", algo="sac", task="g1_walk_flat", sim="mujoco",
                      variant="manager", repeat=0, repo="/nowhere", argv_template=("{python}", "{variant}"),
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
        steps=StepLog([StepRecord(0, True, {"physics_ms": 3.0}),
                       StepRecord(1, False, {"physics_ms": 2.0, "x_ms": 1.0})]),
    )


def test_run_row_columns_and_types(tmp_path):
    files = write_run(planned(tmp_path, "r1"), outcome())
    row = pd.read_parquet(files.runs).iloc[0]
    assert row["throughput"] == 100.0 and row["physics_ms"] == 2.0 and row["wall_s"] == 3.0
    assert "policy_ms" not in row and "audit_env_class" not in row, "only what the run reported"
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
    # a directory read takes the first file's columns; shasweep's reader (and duckdb's union_by_name,
    # test_duckdb) reads every file's
    union = read_runs(tmp_path / "results")
    assert union.set_index("run_key")["update_state.command.compute_ms"].fillna(-1).to_dict() == {
        "r1": -1, "r2": -1, "r3": 0.5}
    assert sorted(read_runs(tmp_path / "results", Where(sweeps=["s2"]))["run_key"]) == ["r3"]


def test_a_root_of_foreign_and_envruntime_runs_reads_whole(tmp_path):
    """A foreign bench's runs file has none of envruntime's columns; pandas, shasweep's reader and
    duckdb still read a root that mixes both, in either order of files."""
    import dataclasses

    import duckdb

    foreign = dataclasses.replace(planned(tmp_path, "a-foreign", "s1"), case="tokenize", algo=None, task=None,
                                  sim=None, protocol="time", argv_template=("{python}", "bench.py"))
    timed = dataclasses.replace(outcome(), header=None, summary={
        "throughput": 5.0, "phase_means_ms": {"wall_ms": 200.0, "user_ms": 150.0, "sys_ms": 10.0},
        "metrics": {"max_rss_mib": 30.0}})
    files = write_run(foreign, timed)
    assert not {"physics_ms", "audit_git_sha", "audit_env_class"} & set(pq.read_schema(files.runs).names)
    assert not set(NOT_ITS_OWN) & set(pq.read_schema(files.runs).names), "only the fields the run has"
    write_run(planned(tmp_path, "b-envruntime", "s1"), outcome(extra_phase="update_state.command.compute_ms"))
    root = tmp_path / "results" / "runs"
    df = pd.read_parquet(root)
    assert sorted(df["run_key"]) == ["a-foreign", "b-envruntime"] and set(DOCUMENTED) - set(df.columns) <= {
        "physics_ms", "audit_git_sha", "audit_module_file", "variant", "algo", "task", "sim"}, \
        "every row, the first file's columns"
    union = read_runs(tmp_path / "results").set_index("run_key")
    assert union.loc["b-envruntime", "physics_ms"] == 2.0 and pd.isna(union.loc["a-foreign", "physics_ms"])
    assert union.loc["a-foreign", "wall_ms"] == 200.0 and pd.isna(union.loc["b-envruntime", "wall_ms"])
    rows = duckdb.sql(f"""SELECT run_key, wall_ms, physics_ms, "update_state.command.compute_ms"
                          FROM read_parquet('{root}/**/*.parquet', union_by_name = true) ORDER BY run_key
                       """).fetchall()
    assert rows == [("a-foreign", 200.0, None, None), ("b-envruntime", None, 2.0, 0.5)]
    assert duckdb.sql(f"SELECT count(*) FROM '{root}/**/*.parquet'").fetchall() == [(2,)]


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
