"""A host is one bench worker: a second ``shasweep worker`` with a host id a live worker holds is
refused with one line naming both; a sweep sends all of a host's runs to one worker even where a host
has several (workers the tool did not start)."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest
from distributed import Client, LocalCluster
from test_entrypoints import serving, shasweep_argv

from orchestrator.dispatch.cluster import BENCH_RESOURCE
from orchestrator.dispatch.host_choice import choose_hosts
from orchestrator.errors import EXIT_INVALID
from orchestrator.worker.host_claim import HostClaim, HostTakenError

START_S = 120.0


def test_a_second_worker_with_a_held_host_id_is_refused_naming_both(tmp_path, monkeypatch):
    monkeypatch.setenv("SHASWEEP_HOST_ID", "one-host")
    monkeypatch.setenv("SHASWEEP_LOCK_DIR", str(tmp_path / "locks"))
    scheduler_argv = shasweep_argv("scheduler", "--port", "0", "--dashboard-address", "127.0.0.1:0")
    with serving(scheduler_argv, tmp_path / "scheduler.log") as scheduler:
        first_argv = shasweep_argv("worker", scheduler.address, "--cpus", "0")
        with serving(first_argv, tmp_path / "first.log") as first:
            refused(first, scheduler.address)


def refused(first, scheduler: str) -> None:
    """A second worker of ``first``'s host id, on CPU 1, exits 2 with one line naming both."""
    second = subprocess.Popen(shasweep_argv("worker", scheduler, "--cpus", "1"), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        _, err = second.communicate(timeout=START_S)
    except subprocess.TimeoutExpired:
        second.kill()
        second.wait()
        pytest.fail("the second worker with the same host id was not refused")
    assert second.returncode == EXIT_INVALID
    assert len(err.strip().splitlines()) == 1, err
    assert f"host id 'one-host' is already held by the live bench worker {first.address} " \
           f"(pid {first.proc.pid}, CPUs 0)" in err
    assert f"this worker (pid {second.pid}, CPUs 1) is refused" in err
    assert first.proc.poll() is None, "the first worker keeps serving"


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
