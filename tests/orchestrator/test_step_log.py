"""A run's steps in bounded memory (``store.step_log``) and the sweep's ``max_steps`` cap, with real
bench processes through ``execute_run`` (no Dask) for the cap."""

from __future__ import annotations

import math
import random
import statistics
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from fakebench.fakerepo import make_run

from orchestrator.contract import StepRecord
from orchestrator.store import step_log
from orchestrator.store.step_log import StepLog
from orchestrator.worker.bench_task import execute_run

FLOOD = Path(__file__).with_name("fakebench") / "step_flood.py"


def noisy_steps(n: int, seed: int) -> list[StepRecord]:
    """Steps with heavy-tailed phase times (one in twenty five times slower) and a sub-phase; with the
    whole-step phase for even seeds, without it for odd ones."""
    rng = random.Random(seed)
    steps = []
    for i in range(n):
        physics = rng.lognormvariate(0.0, 0.4) * (5.0 if rng.random() < 0.05 else 1.0)
        phases = {"physics_ms": physics, "physics.contacts_ms": physics / 3,
                  "policy_ms": rng.uniform(0.1, 0.3)}
        if seed % 2 == 0:
            phases["env_step_ms"] = physics + phases["policy_ms"] + 0.01
        steps.append(StepRecord(step=i, warmup=i < 3, phases=phases))
    return steps


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_the_figures_kept_as_steps_pass_are_those_of_all_the_steps(seed):
    steps = noisy_steps(500, seed)
    log = StepLog(steps)
    measured = [s for s in steps if not s.warmup]
    times = [s.phases["env_step_ms"] if "env_step_ms" in s.phases
             else s.phases["physics_ms"] + s.phases["policy_ms"] for s in measured]
    assert (len(log), log.measured, log.last) == (500, 497, steps[-1])
    assert log.step_cv() == pytest.approx(statistics.stdev(times) / statistics.fmean(times), rel=1e-9)
    assert log.longest_phase_ms == pytest.approx(sum(max(s.phases.values()) for s in measured), rel=1e-12)


def test_rows_go_to_the_spool_in_row_groups_and_the_file_is_the_whole_run(tmp_path, monkeypatch):
    monkeypatch.setattr(step_log, "ROW_GROUP_ROWS", 64)
    steps = noisy_steps(101, 2)  # 4 phases a step: 404 rows, 6 row groups of 64 and 20 rows left
    spool = tmp_path / "steps.spool.parquet"
    log = StepLog(spool=spool, sweep_id="s", run_key="r")
    for step in steps:
        log.append(step)
        assert len(log.table("s", "r")) < 64, "no more than a row group is held in memory"
    assert log.spooled and spool.exists()
    target = tmp_path / "steps.parquet"
    log.move_spool(target)
    assert not spool.exists() and pq.ParquetFile(target).metadata.num_row_groups == 7
    written = pd.read_parquet(target)
    expected = pd.DataFrame([(s.step, s.warmup, name, ms) for s in steps for name, ms in s.phases.items()],
                            columns=["step", "warmup", "phase", "ms"])
    pd.testing.assert_frame_equal(written[["step", "warmup", "phase", "ms"]], expected)
    assert set(written["sweep_id"]) == {"s"} and set(written["run_key"]) == {"r"}
    assert log.measured == 98, "the figures stay after the spool moved"


def test_discard_leaves_neither_rows_nor_spool(tmp_path, monkeypatch):
    monkeypatch.setattr(step_log, "ROW_GROUP_ROWS", 8)
    spool = tmp_path / "steps.spool.parquet"
    log = StepLog(noisy_steps(10, 0), spool=spool)
    assert spool.exists()
    log.discard()
    assert not spool.exists() and len(log) == 0 and not log.spooled and log.step_cv() is None


def capped(run, cap: int):
    return replace(run, max_steps=cap)


def test_a_v1_bench_reporting_more_steps_than_max_steps_fails_naming_the_cap(tmp_path, repo):
    run = make_run(repo, repo.shas[0], results_root=tmp_path / "results",
                   params={"num_envs": 8, "warmup": 1, "measure": 3, "threads": 1})
    assert execute_run(capped(run, 4)).status == "ok", "warm-up and measured steps: 4, the cap"
    outcome = execute_run(capped(replace(run, run_key="over"), 3))
    assert outcome.status == "failed"
    assert "more than max_steps=3 steps (the sweep key max_steps)" in outcome.error
    row = pd.read_parquet(outcome.runs_file).iloc[0]
    assert row["status"] == "failed" and row["steps"] == 2, "a live stream keeps what arrived"


def test_a_million_step_flood_is_stopped_at_the_cap(tmp_path, repo):
    command = ("{python}", str(FLOOD), "--stream", "{stream}", "--measure", "{measure}")
    run = make_run(repo, repo.shas[0], results_root=tmp_path / "results", command=command, timeout_s=600,
                   params={"num_envs": 8, "measure": 1_000_000})
    outcome = execute_run(capped(run, 5000))
    assert outcome.status == "failed" and "max_steps=5000" in outcome.error
    assert len(pd.read_parquet(outcome.steps_file)) == 3 * 5000


def test_the_time_and_json_protocols_refuse_more_steps_than_max_steps(tmp_path, repo):
    base = make_run(repo, repo.shas[0], results_root=tmp_path / "results", command=("true",), params={})
    timed = replace(base, protocol="time", params={"measure": 3}, max_steps=2)
    outcome = execute_run(timed)
    assert outcome.status == "failed" and "params.measure=3: " in outcome.error
    assert "max_steps=2" in outcome.error
    code = "import json, sys; json.dump({{'fps': 1.0, 'ms': [1.0, 2.0, 3.0]}}, open(sys.argv[1], 'w'))"
    argv = ("{python}", "-c", code, "{result}")
    document = replace(base, run_key="json", protocol="json", argv_template=argv, max_steps=2,
                       json_mapping={"throughput": "fps", "phases": {"step_ms": "ms"}})
    outcome = execute_run(document)
    assert outcome.status == "failed" and "max_steps=2" in outcome.error
    assert pd.read_parquet(outcome.steps_file).empty, "a failed json run keeps no number"


def test_max_steps_is_checked_at_load(tmp_path):
    from orchestrator.errors import SpecError
    from orchestrator.spec.load import load_spec

    sweep = tmp_path / "s.yaml"
    sweep.write_text("name: s\nsides: {a: {ref: HEAD}}\nbaseline: a\ncases: [c]\ncommand: [true]\n")
    assert load_spec(sweep, ["max_steps=1000"]).max_steps == 1000
    with pytest.raises(SpecError, match="max_steps") as info:
        load_spec(sweep, ["max_steps=0"])
    assert "must be > 0" in str(info.value)


def test_step_cv_of_a_constant_step_time_is_zero():
    log = StepLog(StepRecord(i, False, {"env_step_ms": 2.0}) for i in range(5))
    assert log.step_cv() == 0.0 and math.isclose(log.longest_phase_ms, 10.0)
