"""The worker's lockstep round task (``worker.round_task``) with real bench processes, worktrees and
Parquet files: a round is one unit under the host lock, every run of it gets its row, a failing
round fails every run of it (nothing of it kept as ok) and running it again replaces them whole."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest
from fakebench.fakerepo import FakeRepo, make_lockstep_repo, make_run

from orchestrator.contract import LockstepSettings
from orchestrator.worker.bench_task import round_cpus
from orchestrator.worker.cleanup import processes_with_run_key
from orchestrator.worker.round_task import execute_round

COMMAND = ("{python}", "lockstep_bench.py", "--stream", "{stream}", "--control", "{control}",
           "--warmup", "{warmup}", "--measure", "{measure}")
LOCKSTEP = LockstepSettings(block_steps=2, blocks=3, block_warmup=1, fallback="stop")


@pytest.fixture
def repo(tmp_path, monkeypatch) -> FakeRepo:
    monkeypatch.setenv("SHASWEEP_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("SHASWEEP_LOCK", raising=False)
    monkeypatch.delenv("SHASWEEP_BENCH_CPUS", raising=False)
    return make_lockstep_repo(tmp_path)


def round_runs(repo: FakeRepo, results: Path, *, repeat: int = 0, extra: dict[str, tuple] | None = None,
               lockstep: LockstepSettings | None = None, timeout_s: float = 120.0):
    runs = []
    for order, (side, sha) in enumerate(zip(("base", "cand"), repo.shas, strict=True)):
        run = make_run(repo, sha, results_root=results, order=2 * repeat + order, side=side,
                       command=COMMAND + (extra or {}).get(side, ()), timeout_s=timeout_s,
                       params={"warmup": 1, "measure": 4, "threads": 1})
        runs.append(replace(run, repeat=repeat, lockstep=lockstep or LOCKSTEP))
    return runs


def rows(outcomes: list[dict]) -> list[pd.Series]:
    return [pd.read_parquet(o.runs_file).iloc[0] for o in outcomes]


def test_a_round_runs_both_sides_in_lockstep_and_stores_their_blocks(tmp_path, repo):
    outcomes = execute_round(round_runs(repo, tmp_path / "results", repeat=1))
    assert [o.status for o in outcomes] == ["ok", "ok"], [o.error for o in outcomes]
    assert [o.ran_in for o in outcomes] == ["lockstep", "lockstep"]
    base, cand = rows(outcomes)
    spans = []
    for row in (base, cand):
        assert row["steps"] == 6 and row["ran_in"] == "lockstep" and row["audited"]
        blocks = json.loads(row["blocks"])
        assert [b["cycle"] for b in blocks if not b["warmup"]] == [0, 1, 2]
        spans += [(b["started"], b["ended"]) for b in blocks]
    spans.sort()
    assert all(later[0] >= earlier[1] for earlier, later in zip(spans, spans[1:], strict=False))
    # repeat 1: the second side starts first, so the start order rotates by round
    assert json.loads(cand["blocks"])[0]["started"] < json.loads(base["blocks"])[0]["started"]
    assert "quiet_wait_s" not in base
    last = str(max(os.sched_getaffinity(0)))
    assert base["host_affinity"] == cand["host_affinity"] == last, "both on the last CPU: threads 1"


@pytest.mark.parametrize("threads, suite, cpus", [
    (0, False, {4, 5, 6, 7}), (2, False, {6, 7}), (0, True, {7}), (3, True, {5, 6, 7}),
    (9, False, {4, 5, 6, 7}),
])
def test_every_process_of_a_round_runs_on_the_same_last_cpus(repo, tmp_path, monkeypatch, threads, suite,
                                                             cpus):
    monkeypatch.setenv("SHASWEEP_BENCH_CPUS", "4-7")
    run = replace(round_runs(repo, tmp_path / "results")[0], params={"threads": threads})
    assert round_cpus(run, suite) == cpus


def test_a_side_without_the_control_channel_stops_the_round_naming_it(tmp_path, repo):
    outcomes = execute_round(round_runs(repo, tmp_path / "results", extra={"cand": ("--no-control",)}))
    assert [o.status for o in outcomes] == ["failed", "failed"]
    assert all(o.no_control for o in outcomes)
    assert f"side 'cand' (SHA {repo.shas[1][:12]})" in outcomes[1].error
    assert outcomes[0].error.startswith("killed with its lockstep round")


def test_with_fallback_interleaved_each_run_runs_alone_and_says_why(tmp_path, repo):
    runs = round_runs(repo, tmp_path / "results", extra={"cand": ("--no-control",)},
                      lockstep=replace(LOCKSTEP, fallback="interleaved"))
    outcomes = execute_round(runs)
    assert [o.status for o in outcomes] == ["ok", "ok"], [o.error for o in outcomes]
    for row in rows(outcomes):
        assert row["ran_in"] == "interleaved" and row["steps"] == 4  # params.measure, as alone
        assert "does not declare the control channel" in row["lockstep_fallback"]
        assert repo.shas[1][:12] in row["lockstep_fallback"]


def test_a_round_that_fails_midway_fails_whole_and_runs_again_whole(tmp_path, repo):
    crash = tmp_path / "crash-now"
    crash.write_text("")
    crashing = ("--crash-at-step", "4", "--crash-file", str(crash))
    runs = round_runs(repo, tmp_path / "results", extra={"cand": crashing})
    failed = execute_round(runs)
    assert [o.status for o in failed] == ["failed", "failed"]
    assert "side 'cand'" in failed[1].error and "exited with code 3" in failed[1].error
    assert failed[0].error.startswith("killed with its lockstep round")
    for row in rows(failed):
        assert row["steps"] == 0 and pd.isna(row["throughput"]) and pd.isna(row["blocks"])
    assert not any(processes_with_run_key(run.run_key) for run in runs), "nothing of the round lives on"
    crash.unlink()
    again = execute_round(runs)
    assert [o.status for o in again] == ["ok", "ok"]
    assert [o.runs_file for o in again] == [o.runs_file for o in failed], "the same files, replaced"
    assert all(row["status"] == "ok" for row in rows(again))


def test_a_side_that_never_answers_times_out_and_the_other_is_killed(tmp_path, repo):
    never = tmp_path / "never-created"
    runs = round_runs(repo, tmp_path / "results", extra={"base": ("--wait-file", str(never))}, timeout_s=3)
    outcomes = execute_round(runs)
    assert [o.status for o in outcomes] == ["timeout", "failed"]
    assert "did not answer within timeout_s=3" in outcomes[0].error
    assert not any(processes_with_run_key(run.run_key) for run in runs)


OWN = {"step_ms", "cpu_ms", "thread_cpu_ms"}  # what the bench helper times in every step itself


def test_what_a_step_returns_is_not_a_phase_unless_it_is_phases(tmp_path, repo):
    """A step returning bytes (which crashed the round) or a dict of counts (which became 'phases')
    reports only the helper's own (step_ms and its CPU times); one that times a phase and returns
    ``Phases`` reports exactly those besides."""
    outcomes = execute_round(round_runs(repo, tmp_path / "results", extra={"base": ("--returns", "bytes"),
                                                                           "cand": ("--returns", "counts")}))
    assert [o.status for o in outcomes] == ["ok", "ok"], [o.error for o in outcomes]
    for outcome in outcomes:
        steps = pd.read_parquet(outcome.steps_file)
        assert set(steps["phase"]) == OWN and len(steps) == 3 * (1 + 3 * (1 + 2))  # warm-up, 3 turns
        assert "the" not in pd.read_parquet(outcome.runs_file).columns
    outcomes = execute_round(round_runs(repo, tmp_path / "phased", extra={"base": ("--returns", "phases")}))
    assert [o.status for o in outcomes] == ["ok", "ok"], [o.error for o in outcomes]
    steps = pd.read_parquet(outcomes[0].steps_file)
    assert set(steps["phase"]) == {*OWN, "spin_ms", "check_ms"}
    by_step = steps.pivot_table(index="step", columns="phase", values="ms")
    assert (by_step["check_ms"] == 0.25).all() and (by_step["spin_ms"] <= by_step["step_ms"]).all()
    blocks = json.loads(rows(outcomes)[0]["blocks"])
    assert all(set(b["phases"]) == {*OWN, "spin_ms", "check_ms"} for b in blocks)
