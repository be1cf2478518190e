"""Drills of what happens to ``shasweep`` from outside while it runs: a reader of its output that leaves,
SIGTERM and SIGHUP, a cancel the bench worker cannot hear, a scheduler that dies mid-run, and a
worker whose scheduler never answers. Each ends with one clear line, a recorded outcome, the
documented exit code and no process left behind."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
from pathlib import Path

import pandas as pd
import psutil
import pytest
from drill_helpers import (
    bench_pids,
    client,
    finish,
    lab_cluster,
    record_of,
    shasweep_argv,
    slow_sweep,
    write_sweep,
)
from fakebench.fakerepo import FakeRepo, make_fake_repo
from fakebench.waits import is_gone, wait_for
from filelock import FileLock

from orchestrator.errors import EXIT_GATE_INCONCLUSIVE, EXIT_INVALID, EXIT_OK, EXIT_RUN_FAILED


def closed_pipe() -> int:
    """The write end of a pipe whose reader has already left (what ``| head`` leaves behind)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    return write_end


@pytest.fixture
def swept(tmp_path) -> tuple[FakeRepo, Path, dict]:
    """A finished sweep of the fake bench: its repo, the shasweep home and the verdicts document. Its
    gate is INCONCLUSIVE (one round has no interval): exit 4, neither the 0 nor the 1 a closed pipe
    used to give."""
    repo = make_fake_repo(tmp_path)
    home = tmp_path / "home"
    sweep = write_sweep(repo, step_ms=5, gates=[{"metric": "throughput", "min_ratio": 0.5}])
    proc = client(repo, ["run", str(sweep), "--no-progress"], home, tmp_path / "run.out",
                  SHASWEEP_LOCK=str(tmp_path / "bench.lock"))
    assert finish(proc) == EXIT_GATE_INCONCLUSIVE, (tmp_path / "run.out").read_text()
    (verdicts,) = (repo.path / "results" / "reports").glob("*.verdicts.json")
    return repo, home, json.loads(verdicts.read_text())


def test_a_report_whose_reader_left_exits_with_the_verdicts_code(tmp_path, swept):
    repo, home, verdicts = swept
    for reader in (tmp_path / f"reader{i}" for i in range(2)):
        pipe = closed_pipe()
        proc = client(repo, ["report", "latest", "--format", "html"], home, reader, stdout=pipe)
        os.close(pipe)
        assert finish(proc) == verdicts["exit_code"] == EXIT_GATE_INCONCLUSIVE, reader.read_text()
        assert "Traceback" not in reader.read_text() and "rror" not in reader.read_text()
        (report_file,) = (repo.path / "results" / "reports").glob("*.html")
        report_file.unlink()  # written again by the next report although nobody reads its output

    # a real `| head -1`, however the race between the writer and head's exit goes
    head = subprocess.run(["bash", "-c", f"cd {repo.path} && shasweep report latest | head -1; "
                                         "exit ${PIPESTATUS[0]}"], capture_output=True, text=True,
                          env={**os.environ, "SHASWEEP_HOME": str(home)}, timeout=300)
    assert head.returncode == verdicts["exit_code"], head.stderr
    assert head.stdout.startswith("shasweep report:") and "Traceback" not in head.stderr


def test_a_sweep_piped_into_a_reader_that_left_runs_to_its_end(tmp_path):
    repo = make_fake_repo(tmp_path)
    pipe = closed_pipe()
    proc = client(repo, ["run", str(write_sweep(repo, step_ms=5))], tmp_path / "home", tmp_path / "err.out",
                  stdout=pipe, SHASWEEP_LOCK=str(tmp_path / "bench.lock"))
    os.close(pipe)
    assert finish(proc) == EXIT_OK, (tmp_path / "err.out").read_text()
    record = record_of(repo)
    assert record["status"] == "finished" and [o["status"] for o in record["outcomes"]] == ["ok", "ok"]
    assert (repo.path / "results" / "reports" / f"{record['sweep_id']}.verdicts.json").exists()
    assert "Traceback" not in (tmp_path / "err.out").read_text()


@pytest.mark.parametrize("signum, whom", [(signal.SIGTERM, "client"), (signal.SIGHUP, "group")])
def test_sigterm_and_sighup_stop_a_sweep_as_ctrl_c_does(tmp_path, signum, whom):
    """SIGTERM to the client (``kill PID``) and SIGHUP to its process group (its terminal closed)."""
    repo = make_fake_repo(tmp_path)
    home = tmp_path / "home"
    lock = {"SHASWEEP_LOCK": str(tmp_path / "bench.lock")}
    sweep = slow_sweep(repo, tmp_path)  # the signal lands in the first run
    proc = client(repo, ["run", str(sweep), "--no-progress"], home, tmp_path / "client.out", **lock)
    bench = wait_for(lambda: (bench_pids(home) or [None])[0], "the first run's bench")
    group = [p.pid for p in psutil.Process(proc.pid).children(recursive=True)]
    if whom == "client":
        os.kill(proc.pid, signum)
    else:
        os.killpg(proc.pid, signum)
    assert finish(proc) == EXIT_RUN_FAILED
    out = (tmp_path / "client.out").read_text()
    name = signal.Signals(signum).name
    assert "Traceback" not in out and f"interrupted by {name}" in out, out
    for pid in [bench, *group]:
        assert wait_for(lambda p=pid: is_gone(p), f"{pid} to exit"), "a process outlived the sweep"
    record = record_of(repo)
    assert record["status"] == "stopped" and f"interrupted by {name}" in record["stopped_reason"]
    assert [o["status"] for o in record["outcomes"]] == ["cancelled", "cancelled"]

    (tmp_path / "slow").unlink()
    resume = client(repo, ["run", "--resume", record["sweep_id"], "--no-progress"], home,
                    tmp_path / "resume.out", **lock)
    assert finish(resume) == EXIT_OK, (tmp_path / "resume.out").read_text()
    assert record_of(repo)["status"] == "finished"


def test_cancel_stops_a_run_that_waits_for_the_host_lock(tmp_path):
    repo = make_fake_repo(tmp_path)
    home = tmp_path / "home"
    lock = tmp_path / "bench.lock"
    with FileLock(lock):  # another sweep's bench holds this host
        proc = client(repo, ["run", str(slow_sweep(repo, tmp_path)), "--no-progress"], home,
                      tmp_path / "client.out", SHASWEEP_LOCK=str(lock))
        wait_for(lambda: list((home / "logs").glob("*/*")), "the first run to wait for the host lock")
        cancel = client(repo, ["cancel", "latest", "--wait-s", "120"], home, tmp_path / "cancel.out")
        assert finish(cancel) == EXIT_OK, (tmp_path / "cancel.out").read_text()
        assert finish(proc, timeout_s=120) == EXIT_RUN_FAILED, "the sweep stopped while the lock was held"
    record = record_of(repo)
    assert record["status"] == "stopped" and "cancel" in record["stopped_reason"]
    first, second = record["outcomes"]
    assert first["status"] == "cancelled" and "waited for the host lock" in first["error"], first
    assert second["status"] == "cancelled" and "not run" in second["error"]
    assert bench_pids(home) == [], "no bench ever started"


def test_cancel_exits_3_when_the_sweep_did_not_stop_within_wait_s(tmp_path):
    repo = make_fake_repo(tmp_path)
    home = tmp_path / "home"
    proc = client(repo, ["run", str(slow_sweep(repo, tmp_path)), "--no-progress"], home,
                  tmp_path / "client.out", SHASWEEP_LOCK=str(tmp_path / "bench.lock"))
    bench = wait_for(lambda: (bench_pids(home) or [None])[0], "the first run's bench")
    # the Dask worker process running the bench task: the client's child among the bench's ancestors
    (worker,) = [p for p in psutil.Process(bench).parents() if p.ppid() == proc.pid]
    worker.suspend()  # SIGSTOP: it cannot hear the cancel
    try:
        cancel = client(repo, ["cancel", "latest", "--wait-s", "5"], home, tmp_path / "cancel.out")
        assert finish(cancel) == EXIT_RUN_FAILED
        said = (tmp_path / "cancel.out").read_text()
        assert "still running 5 s after the cancel request" in said and "Traceback" not in said, said
    finally:
        worker.resume()  # SIGCONT: it hears the cancel now
    assert finish(proc) == EXIT_RUN_FAILED
    record = record_of(repo)
    assert record["status"] == "stopped" and [o["status"] for o in record["outcomes"]] == ["cancelled"] * 2


def test_list_and_status_tell_a_sweep_whose_client_was_killed_from_a_running_one(tmp_path):
    repo = make_fake_repo(tmp_path)
    home = tmp_path / "home"
    lock = {"SHASWEEP_LOCK": str(tmp_path / "bench.lock")}
    proc = client(repo, ["run", str(slow_sweep(repo, tmp_path)), "--no-progress"], home,
                  tmp_path / "client.out", **lock)
    wait_for(lambda: bench_pids(home), "the first run's bench")
    shown = {}
    for command in (["list"], ["status", "latest"]):
        query = client(repo, command, home, tmp_path / "query.out")
        assert finish(query) == EXIT_OK
        shown[command[0]] = (tmp_path / "query.out").read_text()
    assert " running " in shown["list"] and ": running (live" in shown["status"], shown
    os.killpg(proc.pid, signal.SIGKILL)  # the client, its cluster and its bench: nothing records more
    proc.wait()
    assert record_of(repo)["status"] == "running", "the record could not say more"
    for command in (["list"], ["status", "latest"]):
        query = client(repo, command, home, tmp_path / "query.out")
        assert finish(query) == EXIT_OK
        shown[command[0]] = (tmp_path / "query.out").read_text()
    assert "stopped (client gone)" in shown["list"] and " running " not in shown["list"], shown["list"]
    assert ": stopped (client gone) (from the sweep record" in shown["status"], shown["status"]
    assert "runs: 2 not run of 2" in shown["status"], shown["status"]

    (tmp_path / "slow").unlink()
    resume = client(repo, ["run", "--resume", "latest", "--no-progress"], home, tmp_path / "resume.out",
                    **lock)
    assert finish(resume) == EXIT_OK, (tmp_path / "resume.out").read_text()
    assert record_of(repo)["status"] == "finished"


def test_losing_the_scheduler_mid_run_is_one_line_a_failed_run_and_a_resumable_sweep(tmp_path):
    repo = make_fake_repo(tmp_path)
    home = tmp_path / "home"
    with lab_cluster(tmp_path, home, "first") as scheduler:
        proc = client(repo, ["run", str(slow_sweep(repo, tmp_path)), "--no-progress", "--scheduler",
                             scheduler.address], home, tmp_path / "client.out")
        wait_for(lambda: bench_pids(home), "the first run's bench")
        scheduler.proc.kill()  # SIGKILL: the scheduler is gone mid-run
        assert finish(proc) == EXIT_RUN_FAILED
    out = (tmp_path / "client.out").read_text()
    record = record_of(repo)
    first_key = record["outcomes"][0]["run_key"]
    lost = f"lost the scheduler at {scheduler.address} during run {first_key}"
    assert f"shasweep: {lost}" in out and "Traceback" not in out and "AttributeError" not in out, out
    assert record["status"] == "stopped" and lost in record["stopped_reason"], record["stopped_reason"]
    first, second = record["outcomes"]
    assert first["status"] == "failed" and lost in first["error"], first
    assert second["status"] == "cancelled" and "not run" in second["error"]
    rows = pd.read_parquet(repo.path / "results" / "runs")
    assert rows["status"].tolist() in ([], ["failed"]), "the worker may or may not have lived to write it"
    assert all(lost in error for error in rows["error"]), rows["error"].tolist()

    (tmp_path / "slow").unlink()
    with lab_cluster(tmp_path, home, "second") as scheduler:
        resume = client(repo, ["run", "--resume", "latest", "--no-progress", "--scheduler",
                               scheduler.address], home, tmp_path / "resume.out")
        assert finish(resume) == EXIT_OK, (tmp_path / "resume.out").read_text()
    assert record_of(repo)["status"] == "finished"


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then let go)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_worker_whose_scheduler_is_unreachable_stops_on_a_signal_to_its_group(tmp_path, signum):
    address = f"tcp://127.0.0.1:{closed_port()}"
    out = tmp_path / "worker.out"
    with open(out, "wb") as sink:  # its own session, as a supervisor starts it; the signal goes to the group
        worker = subprocess.Popen(shasweep_argv("worker", address), stdout=sink, stderr=sink,
                                  start_new_session=True,
                                  env={**os.environ, "SHASWEEP_HOST_ID": f"unreachable-{tmp_path.name}"})
    try:
        wait_for(lambda: "Waiting to connect to:" in out.read_text(), "the worker to try its scheduler")
        os.killpg(worker.pid, signum)
        code = worker.wait(timeout=60)  # it went on retrying for good, past SIGTERM and SIGINT
    finally:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait()
    said = out.read_text()
    assert code == EXIT_OK and f"stopped by a signal while connecting to its scheduler at {address}" in said
    assert "Traceback" not in said, said


@pytest.mark.parametrize("argv", [["worker", "tcp://127.0.0.1:99999"],
                                  ["run", "drill.yaml", "--scheduler", "tcp://127.0.0.1:99999"],
                                  ["worker", "tcp://127.0.0.1:0"]])
def test_a_scheduler_address_whose_port_is_no_port_is_bad_input(tmp_path, argv):
    repo = make_fake_repo(tmp_path)
    write_sweep(repo)
    done = subprocess.run(shasweep_argv(*argv), cwd=repo.path, capture_output=True, text=True, timeout=120)
    port = argv[-1].rpartition(":")[2]
    assert done.returncode == EXIT_INVALID, done
    assert f"port {port} is not a port number (1-65535)" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
