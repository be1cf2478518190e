"""`shasweep status`, `shasweep cancel` and Ctrl-C in `shasweep run`, on real clusters with the fake bench."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from fakebench.fakerepo import COMMAND, make_fake_repo, make_run
from fakebench.terminal import CLIENT
from fakebench.waits import WAIT_S, wait_for
from test_dashboard import board_cluster

from orchestrator.cli.main import main
from orchestrator.dispatch.dispatcher import CANCELLED_REASON, dispatch_runs
from orchestrator.errors import EXIT_INVALID, EXIT_RUN_FAILED
from orchestrator.spec.record import SweepRecord
from orchestrator.store import records as sweep_record
from orchestrator.store.parquet import runs_dir
from orchestrator.store.query import Where, read_runs


@pytest.fixture
def repo(tmp_path, monkeypatch):
    monkeypatch.setenv("SHASWEEP_HOME", str(tmp_path / "home"))
    return make_fake_repo(tmp_path)


def wait_for_file(path: Path) -> str:
    return wait_for(lambda: path.is_file() and path.read_text().strip(), f"{path} to appear")


def live_members(pgid: int) -> list[int]:
    """Processes of group ``pgid`` that are not zombies."""
    members = []
    for proc in psutil.process_iter(["pid", "status"]):
        try:
            if os.getpgid(proc.pid) == pgid and proc.info["status"] != psutil.STATUS_ZOMBIE:
                members.append(proc.pid)
        except (ProcessLookupError, psutil.NoSuchProcess):
            continue
    return members


def test_cancel_kills_the_running_bench_and_starts_no_queued_run(tmp_path, repo, capsys):
    results = tmp_path / "results"
    pid_file = tmp_path / "child.pid"
    hang = ("--mode", "hang", "--child-pid-file", str(pid_file))
    runs = [make_run(repo, repo.shas[i % 2], order=i, results_root=results, timeout_s=120,
                     extra_args=hang if i == 0 else ()) for i in range(3)]
    outcome: dict = {}
    with board_cluster() as cluster:
        address = cluster.scheduler_address
        sweep = threading.Thread(target=lambda: outcome.update(result=dispatch_runs(
            runs, scheduler=address, continue_on_error=True, show_progress=False)))
        sweep.start()
        pgid = os.getpgid(int(wait_for_file(pid_file)))  # the bench's group, its hanging child included
        assert len(live_members(pgid)) == 2

        assert main(["status", "test-sweep", "--scheduler", address, "--results", str(results)]) == 0
        status = capsys.readouterr().out
        assert f"sweep test-sweep: running (live, scheduler {address})" in status
        assert "runs: 2 queued, 1 running of 3" in status
        assert "current: #0 base sac/fake/none repeat 0, running, step 0/4" in status

        assert main(["cancel", "test-sweep", "--scheduler", address, "--results", str(results)]) == 0
        cancelled = capsys.readouterr().out
        sweep.join(WAIT_S)
        assert main(["cancel", "test-sweep", "--scheduler", address, "--results", str(results)]) == 0
        again = capsys.readouterr().out

    assert "cancel requested for sweep test-sweep" in cancelled
    assert "sweep test-sweep: stopped" in cancelled and "runs: 3 cancelled of 3" in cancelled
    assert "already stopped; nothing to cancel" in again
    result = outcome["result"]
    assert result.stopped_early and result.stop_reason == CANCELLED_REASON
    assert [o.status for o in result.runs] == ["cancelled"] * 3
    assert "killed its process group" in result.runs[0].error
    assert all(o.error.startswith("not run: the sweep stopped") for o in result.runs[1:])
    recorded = read_runs(results, Where(sweeps=["test-sweep"]))
    assert recorded["run_key"].tolist() == [runs[0].run_key], "queued runs never started"
    assert recorded["status"].tolist() == ["cancelled"]
    assert live_members(pgid) == [], "the bench and its child are gone"


SPEC = {"name": "s", "sides": {"a": {"ref": "HEAD"}}, "baseline": "a", "cases": ["c"]}


def write_record(results: Path, **fields) -> None:
    sweep_record.write_record(results, SweepRecord.from_json({"spec": SPEC, "sides": {}, **fields}))


def test_status_from_the_record_and_run_files(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    results = tmp_path / "results"
    write_record(results, sweep_id="s-20260101T000000", status="running", planned_runs=4)
    runs_dir(results, "s-20260101T000000").mkdir(parents=True)
    for key, status in (("k0", "ok"), ("k1", "failed")):
        pq.write_table(pa.table({"status": [status]}),
                       runs_dir(results, "s-20260101T000000") / f"{key}.parquet")
    with sweep_record.sweep_lock(results, "s-20260101T000000"):  # its client runs it
        assert main(["status", "--results", str(results)]) == 0  # latest, no scheduler in the record
    out = capsys.readouterr().out
    assert "sweep s-20260101T000000: running (from the sweep record and run files" in out
    assert "runs: 1 ok, 1 failed, 1 running, 1 queued of 4" in out

    assert main(["status", "--results", str(results)]) == 0  # nobody holds the sweep's lock any more
    out = capsys.readouterr().out
    assert "sweep s-20260101T000000: stopped (client gone) (from the sweep record and run files" in out
    assert "runs: 1 ok, 1 failed, 2 not run of 4" in out


@pytest.mark.parametrize("argv, message", [
    (["status", "nope"], "no sweep 'nope'"),
    (["cancel", "nope"], "no sweep 'nope'"),
    (["status", "s-20260101T000000", "--scheduler", "localhost:1"], "is not an address like tcp://HOST:PORT"),
    (["cancel", "s-20260101T000000"], "is not running (its record: finished)"),
    (["cancel", "s-20260101T000000", "--wait-s", "-1"], "--wait-s -1 is negative"),
])
def test_status_and_cancel_errors_exit_2(argv, message, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    write_record(tmp_path / "results", sweep_id="s-20260101T000000", status="finished", planned_runs=1,
                 outcomes=[{"run_key": "k", "status": "ok"}])
    assert main(argv) == EXIT_INVALID
    assert message in capsys.readouterr().err


def running_bench(home: Path, measure: int) -> int | None:
    """PID of the bench whose stream header asks for ``measure`` steps, once it is written."""
    for stream in home.glob("logs/*/*/stream.jsonl"):
        header = json.loads(stream.read_text().partition("\n")[0] or "{}")
        if header.get("params", {}).get("measure") == measure:
            return header["audit"]["pid"]
    return None


@pytest.mark.slow
def test_ctrl_c_in_run_cancels_its_own_sweep(tmp_path, repo, monkeypatch, capsys):
    long_run = 100_000  # steps of the "new" side: it runs until it is cancelled
    sweep = {"name": "ctrlc", "sides": {"old": {"ref": "HEAD~1"},
                                        "new": {"ref": "HEAD", "overrides": [f"params.measure={long_run}"]}},
             "baseline": "old", "cases": ["sac/fake/none"], "known": {"tasks": [], "sims": []},
             "command": list(COMMAND), "params": {"num_envs": 8, "warmup": 1, "measure": 3, "threads": 1},
             "repeats": 2, "timeout_s": 600}
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(sweep, sort_keys=False))  # sides run in declaration order
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[2]),
                                                        os.environ.get("PYTHONPATH", "")])}
    client = subprocess.Popen([sys.executable, "-c", CLIENT, "run", str(path)], cwd=repo.path,
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + WAIT_S
        while (pid := running_bench(tmp_path / "home", long_run)) is None:
            assert time.monotonic() < deadline and client.poll() is None, "the long run never started"
            time.sleep(0.1)
        pgid = os.getpgid(pid)
        client.send_signal(signal.SIGINT)
        out, err = client.communicate(timeout=WAIT_S)
    finally:
        client.kill()
    assert client.returncode == EXIT_RUN_FAILED, err[-3000:]
    (record_file,) = (repo.path / "results" / "sweeps").glob("ctrlc-*.json")
    record = json.loads(record_file.read_text())
    assert record["status"] == "stopped" and "Ctrl-C" in record["stopped_reason"]
    assert [o["status"] for o in record["outcomes"]] == ["ok", "cancelled", "cancelled", "cancelled"]
    assert record["scheduler"].startswith("tls://127.0.0.1:"), "the embedded cluster speaks TLS"
    assert not list((tmp_path / "home" / "clusters").glob("*.pem")), "its credentials went with it"
    board = record["dashboard_url"]
    assert board.startswith("http://127.0.0.1:") and board.endswith("/shasweep")
    assert f"dashboard: {board}" in err, "run prints the live board's URL"
    stored = read_runs(repo.path / "results", Where(sweeps=[record["sweep_id"]])).sort_values("order")
    assert stored["status"].tolist() == ["ok", "cancelled"], "the queued runs never started"
    assert live_members(pgid) == []

    monkeypatch.chdir(repo.path)  # status finds the sweep by its record; its embedded scheduler is gone
    assert main(["status"]) == 0
    shown = capsys.readouterr().out
    assert f"sweep {record['sweep_id']}: stopped" in shown and "runs: 1 ok, 3 cancelled of 4" in shown
