"""Fault drills on real processes: the bench, the Dask worker or the client killed with SIGKILL mid-run,
a run past its timeout, and a read-only results root. Nothing is lost: what happened is recorded, no
process is left behind, and ``shasweep run --resume`` completes the sweep without a duplicate row."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import dask
import pandas as pd
import psutil
import pytest
import yaml
from distributed import LocalCluster

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "orchestrator"))
from fakebench.fakerepo import COMMAND, FakeRepo, make_fake_repo, make_run  # noqa: E402
from fakebench.waits import is_gone, wait_for  # noqa: E402

from orchestrator.cli.main import main  # noqa: E402
from orchestrator.dispatch.cluster import BENCH_RESOURCE  # noqa: E402
from orchestrator.dispatch.dispatcher import dispatch_runs  # noqa: E402
from orchestrator.errors import EXIT_INVALID, EXIT_OK, EXIT_RUN_FAILED  # noqa: E402

# ``-X importtime`` makes the fake bench write to stderr, so its tail has something to show.
STDERR_COMMAND = ("{python}", "-X", "importtime", *COMMAND[1:])


def bench_pid(home: Path, run_number: int) -> int | None:
    """PID of the bench of the ``run_number``-th run (1-based) once its header is written, else None."""
    streams = sorted((home / "logs").glob("*/*/stream.jsonl"), key=lambda p: p.stat().st_mtime)
    if len(streams) < run_number:
        return None
    first_line = streams[run_number - 1].read_text().partition("\n")[0]
    return json.loads(first_line)["audit"]["pid"] if first_line else None


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("SHASWEEP_HOME", str(tmp_path / "home"))  # inherited by workers and subprocesses
    return tmp_path / "home"


@pytest.fixture(scope="module")
def bench_cluster(tmp_path_factory):
    """A real one-worker process cluster holding the bench resource, shared by the drills below."""
    with pytest.MonkeyPatch.context() as patch:
        home = tmp_path_factory.mktemp("cluster") / "home"
        patch.setenv("SHASWEEP_HOME", str(home))
        with dask.config.set({"distributed.scheduler.allowed-failures": 0}), LocalCluster(
                n_workers=1, threads_per_worker=1, processes=True, resources={BENCH_RESOURCE: 1},
                host="127.0.0.1", dashboard_address="127.0.0.1:0", silence_logs=logging.ERROR) as cluster:
            yield cluster.scheduler_address, home


def hang_run(repo: FakeRepo, tmp_path: Path, sweep_id: str, **kwargs):
    """Run 0 of a sweep: a fake bench that writes its header, starts a child and sleeps."""
    return make_run(repo, repo.shas[0], results_root=tmp_path / "results", sweep_id=sweep_id,
                    command=STDERR_COMMAND, extra_args=("--mode", "hang", "--child-pid-file",
                                                        str(tmp_path / f"{sweep_id}.child")), **kwargs)


@pytest.mark.parametrize("continue_on_error", [False, True])
def test_bench_killed_mid_run(tmp_path, bench_cluster, continue_on_error):
    scheduler, _ = bench_cluster
    repo = make_fake_repo(tmp_path)
    sweep_id = f"bench-kill-{continue_on_error}"
    plan = [hang_run(repo, tmp_path, sweep_id),
            make_run(repo, repo.shas[1], order=1, results_root=tmp_path / "results", sweep_id=sweep_id)]
    child_file = tmp_path / f"{sweep_id}.child"
    pids: dict[str, int] = {}

    def kill_the_bench() -> None:
        pids["child"] = int(wait_for(lambda: child_file.exists() and child_file.read_text(), "the child"))
        pids["bench"] = psutil.Process(pids["child"]).ppid()
        os.kill(pids["bench"], signal.SIGKILL)

    killer = threading.Thread(target=kill_the_bench)
    killer.start()
    outcome = dispatch_runs(plan, scheduler=scheduler, continue_on_error=continue_on_error,
                            show_progress=False)
    killer.join()

    killed, second = outcome.runs
    assert killed.status == "failed"
    assert "bench was killed by signal 9 (SIGKILL)" in killed.error
    assert "stderr tail:" in killed.error and "import time:" in killed.error
    assert wait_for(lambda: is_gone(pids["child"]), "the bench's child to die"), "orphaned child"
    assert second.status == ("ok" if continue_on_error else "cancelled")
    assert outcome.stopped_early is not continue_on_error
    rows = pd.read_parquet(tmp_path / "results" / "runs")
    assert rows.set_index("order")["status"].to_dict() == ({0: "failed", 1: "ok"} if continue_on_error
                                                           else {0: "failed"})


def test_run_past_its_timeout_loses_its_process_group(tmp_path, bench_cluster):
    scheduler, _ = bench_cluster
    repo = make_fake_repo(tmp_path)
    outcome = dispatch_runs([hang_run(repo, tmp_path, "timeout", timeout_s=1.0)], scheduler=scheduler,
                        continue_on_error=False, show_progress=False)
    (run,) = outcome.runs
    assert run.status == "timeout" and "timeout_s=1" in run.error
    child = int((tmp_path / "timeout.child").read_text())
    assert wait_for(lambda: is_gone(child), "the bench's child to die")
    assert pd.read_parquet(tmp_path / "results" / "runs")["status"].tolist() == ["timeout"]


def test_children_of_a_bench_whose_worker_died_are_killed_by_the_next_run(tmp_path, bench_cluster):
    scheduler, _ = bench_cluster
    repo = make_fake_repo(tmp_path)
    plan = [hang_run(repo, tmp_path, "orphans"),
            make_run(repo, repo.shas[1], order=1, results_root=tmp_path / "results", sweep_id="orphans")]
    child_file = tmp_path / "orphans.child"
    children: list[int] = []

    def kill_the_worker() -> None:
        children.append(int(wait_for(lambda: child_file.exists() and child_file.read_text(), "the child")))
        bench = psutil.Process(psutil.Process(children[0]).ppid())
        bench.parent().parent().send_signal(signal.SIGKILL)  # the worker: the bench's parent is its helper

    killer = threading.Thread(target=kill_the_worker)
    killer.start()
    outcome = dispatch_runs(plan, scheduler=scheduler, continue_on_error=True, show_progress=False)
    killer.join()
    assert [run.status for run in outcome.runs] == ["failed", "ok"]
    assert is_gone(children[0]), "the next run killed what was left of the bench"


def write_sweep(repo: FakeRepo, **overrides) -> Path:
    """Two runs (one per commit) of about half a second each."""
    sweep = {"name": "drill", "sides": {"old": {"ref": "HEAD~1"}, "new": {"ref": "HEAD"}}, "baseline": "old",
             "cases": ["sac/fake/none"], "known": {"tasks": [], "sims": []},
             "command": [*COMMAND, "--step-ms", "50"], "repeats": 1, "timeout_s": 60,
             "params": {"num_envs": 8, "warmup": 0, "measure": 10, "threads": 1}, **overrides}
    path = repo.path / "sweep.yaml"
    path.write_text(yaml.safe_dump(sweep, sort_keys=False))
    return path


def start_sweep(repo: FakeRepo, tmp_path: Path) -> subprocess.Popen:
    """``shasweep run`` as its own process (embedded cluster), stdout to a file."""
    out = open(tmp_path / "client.out", "wb")  # noqa: SIM115 - the child writes to it; closed with the test
    cmd = [sys.executable, "-m", "orchestrator.cli", "run", str(write_sweep(repo)), "--no-progress"]
    return subprocess.Popen(cmd, cwd=repo.path, stdout=out, stderr=subprocess.STDOUT)


def resume_and_check(repo: FakeRepo, scheduler: str, monkeypatch, first_run: pd.DataFrame) -> None:
    """Resume the only sweep: it must finish with one ok row per run, the run already ok untouched."""
    monkeypatch.chdir(repo.path)
    (record_path,) = (repo.path / "results" / "sweeps").glob("drill-*.json")
    sweep_id = record_path.stem
    assert main(["run", "--resume", sweep_id, "--scheduler", scheduler, "--no-progress"]) == EXIT_OK
    rows = pd.read_parquet(repo.path / "results" / "runs")
    assert len(rows) == 2 and rows["run_key"].is_unique and (rows["status"] == "ok").all()
    kept = rows.set_index("run_key").loc[first_run["run_key"], "started_at"].tolist()
    assert kept == first_run["started_at"].tolist(), "the run already ok was not run again"
    record = json.loads(record_path.read_text())
    assert record["status"] == "finished" and len(record["resumed"]) == 1
    assert [o["status"] for o in record["outcomes"]] == ["ok", "ok"]


def test_worker_killed_mid_run_then_resume(tmp_path, home, monkeypatch, capsys, bench_cluster):
    repo = make_fake_repo(tmp_path)
    monkeypatch.chdir(repo.path)
    pids: list[int] = []

    def kill_the_worker() -> None:  # the Dask worker process running the second run's bench task
        pids.append(wait_for(lambda: bench_pid(home, 2), "the second run's bench"))
        helper = psutil.Process(pids[0]).parent()  # the launch helper that spawned and reaps the bench
        helper.parent().send_signal(signal.SIGKILL)

    killer = threading.Thread(target=kill_the_worker)
    killer.start()
    assert main(["run", str(write_sweep(repo)), "--no-progress"]) == EXIT_RUN_FAILED
    killer.join()
    assert wait_for(lambda: is_gone(pids[0]), "the bench to die with its worker")
    (record_path,) = (repo.path / "results" / "sweeps").glob("drill-*.json")
    record = json.loads(record_path.read_text())
    assert record["status"] == "stopped" and "KilledWorker" in record["stopped_reason"]
    assert [o["status"] for o in record["outcomes"]] == ["ok", "failed"]
    assert f"shasweep run --resume {record['sweep_id']}" in capsys.readouterr().out
    first_run = pd.read_parquet(repo.path / "results" / "runs")  # no half-written file in the way
    assert first_run["status"].tolist() == ["ok"]

    resume_and_check(repo, bench_cluster[0], monkeypatch, first_run)


def test_client_killed_mid_sweep_then_resume(tmp_path, home, monkeypatch, bench_cluster):
    repo = make_fake_repo(tmp_path)
    client = start_sweep(repo, tmp_path)
    pid = wait_for(lambda: bench_pid(home, 2), "the second run's bench")
    descendants = psutil.Process(client.pid).children(recursive=True)
    assert pid in {p.pid for p in descendants}
    client.send_signal(signal.SIGKILL)
    client.wait()
    for process in descendants:  # scheduler, nanny, worker and bench all go with the client
        assert wait_for(lambda p=process: is_gone(p.pid), f"{process.pid} to exit"), "orphan process"
    record = json.loads(next((repo.path / "results" / "sweeps").glob("drill-*.json")).read_text())
    assert record["status"] == "running", "the killed client could not record anything more"
    first_run = pd.read_parquet(repo.path / "results" / "runs")
    assert first_run["status"].tolist() == ["ok"]

    resume_and_check(repo, bench_cluster[0], monkeypatch, first_run)


def test_read_only_results_root_fails_before_dispatch(tmp_path, home, monkeypatch, capsys):
    repo = make_fake_repo(tmp_path)
    monkeypatch.chdir(repo.path)
    read_only = "/sys/shasweep-results"  # sysfs: no one may create a directory there, not even root
    assert main(["run", str(write_sweep(repo)), f"results={read_only}"]) == EXIT_INVALID
    err = capsys.readouterr().err
    assert err.startswith(f"shasweep: error: results: cannot write to '{read_only}'")
    assert not Path(read_only).exists() and not home.exists(), "nothing was dispatched"
