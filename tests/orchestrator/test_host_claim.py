"""A host is one bench worker: a second ``shasweep worker`` with a host id a live worker holds is
refused with one line naming both; a sweep sends all of a host's runs to one worker even where a host
has several (workers the tool did not start)."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
from contextlib import ExitStack

import pytest
from distributed import Client, LocalCluster

from orchestrator.dispatch.cluster import BENCH_RESOURCE
from orchestrator.dispatch.host_choice import choose_hosts
from orchestrator.errors import EXIT_INVALID
from orchestrator.worker.host_claim import HostClaim, HostTakenError

START_S = 120.0


def shasweep(*args: str, env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "orchestrator.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, **env})


def first_line(proc: subprocess.Popen, starts: str) -> str:
    """The first stdout line of ``proc`` starting with ``starts`` (its own announcement)."""
    for line in proc.stdout:
        if line.startswith(starts):
            return line
    pytest.fail(f"no line starting {starts!r}; exit {proc.wait()}: {proc.stderr.read()}")


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_a_second_worker_with_a_held_host_id_is_refused_naming_both(tmp_path):
    env = {"SHASWEEP_HOST_ID": "one-host", "SHASWEEP_LOCK_DIR": str(tmp_path / "locks"),
           "SHASWEEP_HOME": str(tmp_path / "home")}
    with ExitStack() as stack:
        scheduler = shasweep("scheduler", "--port", "0", "--dashboard-address", "127.0.0.1:0", env=env)
        stack.callback(stop, scheduler)
        address = first_line(scheduler, "shasweep scheduler at ").split()[3].rstrip(",")
        first = shasweep("worker", address, "--cpus", "0", env=env)
        stack.callback(stop, first)
        first_address = first_line(first, "shasweep worker at ").split()[3]
        second = shasweep("worker", address, "--cpus", "1", env=env)
        stack.callback(stop, second)
        try:
            _, err = second.communicate(timeout=START_S)
        except subprocess.TimeoutExpired:
            pytest.fail("the second worker with the same host id was not refused")
        assert second.returncode == EXIT_INVALID
        assert len(err.strip().splitlines()) == 1, err
        assert f"host id 'one-host' is already held by the live bench worker {first_address} " \
               f"(pid {first.pid}, CPUs 0)" in err
        assert f"this worker (pid {second.pid}, CPUs 1) is refused" in err
        assert first.poll() is None, "the first worker keeps serving"


def test_the_claim_is_free_again_once_its_holder_is_gone(tmp_path, monkeypatch):
    monkeypatch.setenv("SHASWEEP_LOCK_DIR", str(tmp_path))
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time\nfrom orchestrator.worker.host_claim import HostClaim\n"
        "HostClaim('h', 'the holder'); print('held', flush=True); time.sleep(120)")],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(HostTakenError, match="held by the live bench worker the holder; this worker"):
            HostClaim("h", "me")
    finally:
        holder.kill()
        holder.wait()
    HostClaim("h", "me").release()  # the kernel dropped the dead holder's lock


def test_a_sweep_uses_one_worker_of_a_host_with_several(monkeypatch):
    """Two workers of one host id (a ``LocalCluster`` of two, not started by ``shasweep worker``): the
    host's runs all go to one of them."""
    monkeypatch.setenv("SHASWEEP_HOST_ID", "one-host")
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, protocol="tcp://",
                      resources={BENCH_RESOURCE: 1}, host="127.0.0.1", dashboard_address="127.0.0.1:0",
                      silence_logs=logging.ERROR) as cluster, Client(cluster) as client:
        client.wait_for_workers(2)
        for setting in ("one", "all", ["one-host"]):
            (host,) = choose_hosts(client, setting)
            assert host.host_id == "one-host" and len(host.workers) == 1
            assert host.live_workers(client) == host.workers
