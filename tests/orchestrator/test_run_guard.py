"""Every dispatched run gets its row, whatever failed on the worker; nothing the bench started outlives
its run; the bench's environment and resource usage."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import pytest
from fakebench.fakerepo import make_fake_repo, make_run
from fakebench.waits import is_gone

from orchestrator.contract import RunResult, StepRecord
from orchestrator.store import parquet
from orchestrator.store.step_log import StepLog
from orchestrator.worker import bench_env as env_module
from orchestrator.worker.bench_task import execute_run
from orchestrator.worker.instrumented import instrumented_env
from orchestrator.worker.run_guard import store_result

MISBEHAVE = Path(__file__).with_name("fakebench") / "misbehave.py"


def misbehaving(mode: str, *extra: str) -> tuple[str, ...]:
    return ("{python}", str(MISBEHAVE), "--stream", "{stream}", "--mode", mode, *extra)


@pytest.fixture
def repo(tmp_path, monkeypatch):
    monkeypatch.setenv("SHASWEEP_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SHASWEEP_LOCK", str(tmp_path / "locks" / "bench.lock"))
    monkeypatch.delenv("SHASWEEP_BENCH_CPUS", raising=False)
    return make_fake_repo(tmp_path)


def row_of(outcome: dict) -> pd.Series:
    return pd.read_parquet(outcome.runs_file).iloc[0]


def test_a_record_nested_too_deeply_fails_the_run_with_a_row(tmp_path, repo):
    outcome = execute_run(make_run(repo, repo.shas[0], results_root=tmp_path / "results",
                                   command=misbehaving("deep-json")))
    assert outcome.status == "failed" and "nested too deeply" in outcome.error
    assert row_of(outcome)["status"] == "failed"


def test_a_read_only_home_still_gives_the_run_its_row(tmp_path, repo, monkeypatch):
    monkeypatch.setenv("SHASWEEP_HOME", "/sys/shasweep-home")  # sysfs: not even root may create it
    outcome = execute_run(make_run(repo, repo.shas[0], results_root=tmp_path / "results"))
    assert outcome.status == "failed" and "/sys/shasweep-home" in outcome.error
    row = row_of(outcome)
    assert row["status"] == "failed" and "the bench worker failed: " in row["error"]


def test_a_setsid_daemon_the_bench_started_is_killed_after_the_run(tmp_path, repo):
    pid_file = tmp_path / "daemon.pid"
    outcome = execute_run(make_run(repo, repo.shas[0], results_root=tmp_path / "results",
                                   command=misbehaving("daemon", "--pid-file", str(pid_file)),
                                   params={"num_envs": 8, "warmup": 0, "measure": 2, "threads": 1}))
    assert outcome.status == "ok", outcome.error
    daemon = int(pid_file.read_text())
    assert is_gone(daemon), "the daemon outlived its run"


# Forks a daemon that leaves the bench's session and drops its whole environment (the run key with
# it), as a double-forked service would; the bench itself exits at once.
DAEMONIZE = """
import os, sys
if os.fork() == 0:
    os.setsid()
    daemon = os.fork()
    if daemon == 0:
        os.execve(sys.executable, [sys.executable, "-c", "import time; time.sleep(600)"], dict())
    with open(sys.argv[1], "w") as f:
        f.write(str(daemon))
    os._exit(0)
os.wait()
"""


def test_a_daemon_without_the_run_key_is_killed_after_the_run_too(tmp_path, repo):
    pid_file = tmp_path / "daemon.pid"
    run = replace(make_run(repo, repo.shas[0], results_root=tmp_path / "results", params={"measure": 1}),
                  protocol="time", argv_template=("{python}", "-c", DAEMONIZE, str(pid_file)))
    outcome = execute_run(run)
    assert outcome.status == "ok", outcome.error
    assert is_gone(int(pid_file.read_text())), "the daemon outlived its run"


def test_bench_usage_columns(tmp_path, repo):
    outcome = execute_run(make_run(repo, repo.shas[0], results_root=tmp_path / "results"))
    row = row_of(outcome)
    assert row["bench_user_s"] > 0 and row["bench_sys_s"] >= 0
    assert 5 < row["bench_max_rss_mib"] < 10_000, "a Python process: MiB, not KiB"


def test_the_bench_environment_has_one_base_and_keeps_the_worktree_first(tmp_path, repo, monkeypatch):
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "65536")  # what the embedded cluster's nanny injects
    monkeypatch.setenv("PYTHONPATH", "/inherited")
    run = make_run(repo, repo.shas[0], results_root=tmp_path / "results", env={"PYTHONPATH": "/mine"})
    tree = tmp_path / "tree"
    tree.mkdir()
    env = env_module.bench_env(run, tree, threads=2)
    assert "MALLOC_TRIM_THRESHOLD_" not in env
    assert env["PYTHONPATH"] == os.pathsep.join([str(tree.resolve()), "/mine", "/inherited"])
    assert env["OMP_NUM_THREADS"] == "2" and env["SHASWEEP_RUN_KEY"] == run.run_key
    outcome = execute_run(run)
    audit = row_of(outcome)["audit_pythonpath"]
    assert audit.split(os.pathsep)[1:] == ["/mine", "/inherited"], audit
    assert Path(audit.split(os.pathsep)[0]).name == repo.shas[0], "the worktree first"


def test_the_sides_of_a_round_share_a_str_hash_seed_and_rounds_differ(tmp_path, repo, monkeypatch):
    monkeypatch.delenv("PYTHONHASHSEED", raising=False)
    tree = tmp_path / "tree"
    tree.mkdir()

    def str_hash(**run) -> str:
        env = env_module.bench_env(make_run(repo, repo.shas[0], results_root=tmp_path / "r", **run), tree, 1)
        done = subprocess.run([sys.executable, "-c", "print(hash('json_round_trip'))"], env=env,
                              capture_output=True, text=True, check=True)
        return done.stdout.strip()

    round_0 = {str_hash(side=side, order=0) for side in ("base", "cand", "aa")}
    assert len(round_0) == 1, "one seed for every side of a round"
    assert len({*round_0, str_hash(order=1), str_hash(order=2)}) == 3, "a seed of its own per round"
    assert str_hash(order=0, sweep_id="another") not in round_0
    assert str_hash(order=1, env={"PYTHONHASHSEED": "0"}) == str_hash(order=2, env={"PYTHONHASHSEED": "0"})
    monkeypatch.setenv("PYTHONHASHSEED", "6640")  # what a Dask nanny gives its worker: not the bench's
    assert str_hash(order=1) != str_hash(order=2)


def test_an_instrumented_process_counts_under_the_chosen_seed_or_zero_never_the_rounds():
    env = {"PYTHONHASHSEED": "123", "PATH": "/usr/bin"}  # the round's seed, from bench_env
    assert instrumented_env(env)["PYTHONHASHSEED"] == "0"
    assert instrumented_env(env, "5")["PYTHONHASHSEED"] == "5"
    assert instrumented_env(env)["SHASWEEP_INSTRUMENT"] == "callgrind"


def big_result(steps: int) -> RunResult:
    now = datetime.now(UTC)
    return RunResult(status="ok", error=None, started_at=now, ended_at=now, exit_code=0, log_dir="",
                     steps=StepLog(StepRecord(i, False, {f"p{j}_ms": float(i * j) for j in range(8)})
                                   for i in range(steps)))


def test_a_full_disk_still_leaves_a_failed_row(tmp_path, repo, monkeypatch):
    run = make_run(repo, repo.shas[0], results_root=tmp_path / "results")
    real_write = parquet.write_table

    def enospc_for_big_tables(table, where, options):
        if table.num_rows > 1000:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(table, where, options)

    monkeypatch.setattr(parquet, "write_table", enospc_for_big_tables)
    stored, files = store_result(run, big_result(500))
    assert stored.status == "failed" and "No space left on device" in stored.error
    row = pd.read_parquet(files.runs).iloc[0]
    assert row["status"] == "failed" and "writing the run's results failed" in row["error"]
    assert pd.read_parquet(files.steps).empty


@pytest.fixture
def tiny_filesystem(tmp_path):
    """A 256 KiB tmpfs (needs the right to mount; the monkeypatched test above runs everywhere)."""
    mount = tmp_path / "tiny"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)],
                          capture_output=True)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.decode().strip()}")
    yield mount
    subprocess.run(["umount", str(mount)], check=True)


def test_a_real_full_disk_still_leaves_a_failed_row(tmp_path, repo, tiny_filesystem):
    run = make_run(repo, repo.shas[0], results_root=tiny_filesystem / "results")
    stored, files = store_result(run, big_result(20_000))
    assert stored.status == "failed" and "No space left on device" in stored.error
    assert pd.read_parquet(files.runs).iloc[0]["status"] == "failed"
    assert not list(tiny_filesystem.rglob(".*.tmp"))
