"""Reusing a run of an earlier sweep (``store.reuse``): only the same measurement on the same host is
reused, and the copy is a complete run of the new sweep that still names its original."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from test_results import outcome, planned

from orchestrator.analysis.history_model import HistoryQuery, load_case_history
from orchestrator.store.parquet import write_run
from orchestrator.store.query import Where, read_runs, run_statuses, runs_schema
from orchestrator.store.reuse import MEASURED_FILTER, REUSED_COLUMN, RunPool
from orchestrator.worker.hostinfo import collect_host

HOST = collect_host().id


@pytest.fixture
def donor(tmp_path):
    """Sweep s1 with an ok run r1 (repeat 0) and a failed run r2 (repeat 1)."""
    write_run(planned(tmp_path, "r1", "s1"), outcome(throughput=123.0))
    write_run(replace(planned(tmp_path, "r2", "s1"), repeat=1), outcome(status="failed", throughput=None))
    return tmp_path


def test_the_same_measurement_is_copied_under_the_new_sweep(donor):
    run = replace(planned(donor, "n1", "s2"), order=4)
    got = RunPool(donor / "results", ["s1"]).reuse(run, HOST)
    assert got.status == "ok" and got.throughput == 123.0 and got.reused_from == "s1/r1"
    assert run_statuses(donor / "results", "s2") == {"n1": "ok"}
    row = read_runs(donor / "results", Where(sweeps=["s2"])).iloc[0]
    assert (row["sweep_id"], row["run_key"], row["order"], row["reused_from"]) == ("s2", "n1", 4, "s1/r1")
    original = read_runs(donor / "results", Where(sweeps=["s1"])).set_index("run_key").loc["r1"]
    assert row["started_at"] == original["started_at"] and row["wall_s"] == original["wall_s"]
    assert pd.isna(original.get("reused_from")), "a measured run names no original"
    steps = pd.read_parquet(donor / "results" / "steps" / "sweep=s2" / "n1.parquet")
    assert set(steps["run_key"]) == {"n1"} and set(steps["sweep_id"]) == {"s2"} and len(steps) == 3


@pytest.mark.parametrize("change", [
    {"sha": "b" * 40}, {"case": "sac/go2_joystick_flat/mujoco"}, {"variant": "direct"}, {"repeat": 2},
    {"params": {"num_envs": 16}}, {"env": {"X": "2"}}, {"argv_template": ("{python}", "-O")},
    {"protocol": "json"}, {"python": "/opt/other-env/bin/python"},
])
def test_a_different_measurement_is_not_reused(donor, change):
    run = replace(planned(donor, "n1", "s2"), **change)
    assert RunPool(donor / "results", ["s1"]).reuse(run, HOST) is None
    assert run_statuses(donor / "results", "s2") == {}


def test_the_variant_counts_only_where_the_command_passes_it(tmp_path):
    command = ("{python}", "bench.py")  # a foreign bench: no {variant}, so its runs have none
    write_run(replace(planned(tmp_path, "r1", "s1"), argv_template=command), outcome(throughput=7.0))
    run = replace(planned(tmp_path, "n1", "s2"), argv_template=command, variant="direct")
    got = RunPool(tmp_path / "results", ["s1"]).reuse(run, HOST)
    assert got is not None and got.reused_from == "s1/r1"
    assert "variant" not in pq.read_schema(got.runs_file).names


def test_another_host_a_failed_run_and_the_sweep_itself_are_not_reused(donor):
    pool = RunPool(donor / "results", ["s1"])
    assert pool.reuse(planned(donor, "n1", "s2"), "other-host") is None
    assert pool.reuse(replace(planned(donor, "n2", "s2"), repeat=1), HOST) is None, "r2 failed"
    assert pool.reuse(planned(donor, "n3", "s1"), HOST) is None, "a sweep never reuses its own runs"
    assert RunPool(donor / "results", []).reuse(planned(donor, "n1", "s2"), HOST) is None


def test_a_copy_of_a_copy_names_the_measured_run(donor):
    RunPool(donor / "results", ["s1"]).reuse(planned(donor, "n1", "s2"), HOST)
    got = RunPool(donor / "results", ["s2"]).reuse(planned(donor, "m1", "s3"), HOST)
    assert got.reused_from == "s1/r1"
    assert read_runs(donor / "results", Where(sweeps=["s3"])).iloc[0]["reused_from"] == "s1/r1"


def test_readers_across_sweeps_count_a_measurement_once(donor):
    RunPool(donor / "results", ["s1"]).reuse(planned(donor, "n1", "s2"), HOST)
    history = load_case_history(donor / "results", HistoryQuery(case="sac/g1_walk_flat/mujoco")).runs
    assert history["run_key"].tolist() == ["r1", "r2"], "shasweep history: the copy is not a sample"
    every_column = runs_schema(donor / "results")  # a measured run's file has no reused_from
    runs = ds.dataset(str(donor / "results" / "runs"), format="parquet", schema=every_column).to_table(
        filter=MEASURED_FILTER)
    assert sorted(runs.column("run_key").to_pylist()) == ["r1", "r2"], "the drift / noise filter"
    assert REUSED_COLUMN in runs.column_names
