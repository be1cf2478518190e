"""The worker-side bench task against the fake bench in a temporary two-commit repository."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import pandas as pd
import psutil
import pytest
from fakebench.fakerepo import make_run

from orchestrator.contract import QuietLimits
from orchestrator.worker.bench_task import execute_run


def run_row(outcome: dict) -> pd.Series:
    return pd.read_parquet(outcome.runs_file).iloc[0]


def test_ok_run_uses_the_worktree_and_records_everything(tmp_path, repo):
    outcome = execute_run(make_run(repo, repo.shas[0], results_root=tmp_path / "results",
                                   params={"num_envs": 8, "warmup": 1, "measure": 3, "threads": 3}))
    assert outcome.status == "ok", outcome.error
    row = run_row(outcome)
    assert row["audit_git_sha"] == repo.shas[0]
    worktree = Path(row["audit_module_file"]).parent
    assert worktree != repo.path and worktree.parent.parent.name == "worktrees"
    assert row["audit_pythonpath"].split(":")[0] == str(worktree), "the worktree comes first on PYTHONPATH"
    assert json.loads(row["audit_threads"]) == {"OMP_NUM_THREADS": "3"}
    assert json.loads(row["host_threads"])["NUMBA_NUM_THREADS"] == "3"
    assert row["physics_ms"] == 3.0 and row["steps"] == 3 and row["throughput"] > 0
    steps = pd.read_parquet(outcome.steps_file)
    assert steps.groupby("warmup")["step"].nunique().to_dict() == {True: 1, False: 3}
    log_dir = Path(outcome.log_dir)
    assert "fake bench stdout noise" in (log_dir / "stdout.log").read_text()


def test_threads_zero_means_the_affinity_size(tmp_path, repo, monkeypatch):
    monkeypatch.setenv("SHASWEEP_BENCH_CPUS", "0")
    outcome = execute_run(make_run(repo, repo.shas[1], results_root=tmp_path / "results",
                                   params={"num_envs": 8, "warmup": 0, "measure": 2, "threads": 0}))
    row = run_row(outcome)
    assert json.loads(row["audit_threads"]) == {"OMP_NUM_THREADS": "1"} and row["host_affinity"] == "0"


@pytest.mark.parametrize("mode, message", [
    ("fail", "bench exited with code 2: ValueError: unknown task 'fake'"),
    ("crash", "stderr tail:\nTraceback: something broke inside the bench"),
    ("malformed", "stream line 3 is not valid JSON"),
    ("protocol2", "bench speaks run protocol 2"),
    ("no-summary", "exited 0 without a summary record"),
    ("negative", "(step 1): negative, NaN or infinite values: physics_ms=-"),
    ("nan", "(step 1): negative, NaN or infinite values: physics_ms=nan"),
    ("repeat-step", "step 1 does not follow step 1 (step numbers must increase)"),
])
def test_failures_are_failed_runs_with_the_reason(tmp_path, repo, mode, message):
    outcome = execute_run(make_run(repo, repo.shas[0], results_root=tmp_path / "results",
                                   extra_args=("--mode", mode)))
    assert outcome.status == "failed"
    assert message in outcome.error
    row = run_row(outcome)
    assert row["status"] == "failed" and message in row["error"] and pd.isna(row["throughput"])


def test_a_summary_throughput_the_steps_do_not_support_fails_the_audit(tmp_path, repo):
    """10x the throughput num_envs x steps / window gives: stored audit_failed, naming both numbers."""
    outcome = execute_run(make_run(repo, repo.shas[0], results_root=tmp_path / "results",
                                   extra_args=("--mode", "inflate")))
    assert outcome.status == "audit_failed"
    row = run_row(outcome)
    assert row["status"] == "audit_failed" and row["audited"]
    assert "disagrees with num_envs 8 x 3 measured steps / measure_wall_s" in row["error"]
    assert "the most the step timings allow" in row["error"]
    honest = run_row(execute_run(make_run(repo, repo.shas[0], results_root=tmp_path / "results", order=1)))
    assert honest["status"] == "ok" and honest["audited"] and pd.isna(honest["error"])


def test_sha_mismatch_names_the_imported_code(tmp_path, repo):
    main_checkout_bench = str(repo.path / "fake_bench.py")  # at the second commit, not the requested first
    command = ("{python}", main_checkout_bench, "--stream", "{stream}")
    outcome = execute_run(make_run(repo, repo.shas[0], results_root=tmp_path / "results", command=command))
    assert outcome.status == "failed"
    assert f"imported code at SHA {repo.shas[1]} from {main_checkout_bench}" in outcome.error
    assert f"not the requested SHA {repo.shas[0]}" in outcome.error


def test_timeout_kills_the_whole_process_group(tmp_path, repo):
    pid_file = tmp_path / "child.pid"
    outcome = execute_run(make_run(repo, repo.shas[0], results_root=tmp_path / "results", timeout_s=1.0,
                                   extra_args=("--mode", "hang", "--child-pid-file", str(pid_file))))
    assert outcome.status == "timeout" and "timeout_s=1" in outcome.error
    child = int(pid_file.read_text())
    try:
        psutil.Process(child).wait(timeout=5)  # reaped by init after SIGKILL; only returns if it died
    except psutil.NoSuchProcess:
        pass
    assert not psutil.pid_exists(child) or psutil.Process(child).status() == psutil.STATUS_ZOMBIE
    assert run_row(outcome)["status"] == "timeout"


def test_unknown_commit_and_placeholder_are_failed_runs(tmp_path, repo):
    bad_sha = execute_run(make_run(repo, "f" * 40, results_root=tmp_path / "results"))
    assert bad_sha.status == "failed" and "does not exist in repository" in bad_sha.error
    bad_arg = execute_run(make_run(repo, repo.shas[0], results_root=tmp_path / "results", order=1,
                                   extra_args=("--x", "{nope}")))
    assert bad_arg.status == "failed" and "unknown placeholder {nope}" in bad_arg.error


def test_host_lock_serialises_concurrent_runs(tmp_path, repo):
    lock = str(tmp_path / "host.lock")
    runs = [make_run(repo, sha, order=i, results_root=tmp_path / "results",
                     params={"num_envs": 8, "warmup": 0, "measure": 20, "threads": 1})
            for i, sha in enumerate(repo.shas)]
    with ThreadPoolExecutor(max_workers=2) as pool:
        outcomes = list(pool.map(lambda run: execute_run(run, lock_path=lock), runs))
    first, second = sorted(outcomes, key=lambda o: o.started_at)
    assert first.status == second.status == "ok"
    assert first.ended_at <= second.started_at, "two bench runs overlapped on one host"


def test_a_quiet_wait_comes_before_the_run_and_is_recorded(tmp_path, repo):
    run = replace(make_run(repo, repo.shas[0], results_root=tmp_path / "results"),
                  quiet=QuietLimits(max_load=1000.0, max_steal=1.0, max_wait_s=60.0))
    outcome = execute_run(run)
    row = run_row(outcome)
    assert outcome.status == "ok" and row["quiet_met"] and row["quiet_wait_s"] >= 1.0
    assert row["quiet_load"] >= 0 and row["started_at"].timestamp() > 0
    plain = run_row(execute_run(make_run(repo, repo.shas[0], results_root=tmp_path / "plain")))
    assert "quiet_wait_s" not in plain and "quiet_met" not in plain, "no quiet: key, no quiet columns"
