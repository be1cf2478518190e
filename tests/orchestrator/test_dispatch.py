"""Dispatch against external clusters: plan checks, missing bench worker, remote runs, cancellation."""

from __future__ import annotations

import logging
import time

import pytest
from distributed import Client, Event, LocalCluster
from fakebench.fakerepo import make_fake_repo, make_run

from orchestrator.contract import cancel_event_name
from orchestrator.dispatch import cluster
from orchestrator.dispatch.dispatcher import dispatch_runs
from orchestrator.errors import ClusterError, InvalidInputError
from orchestrator.worker.bench_task import execute_run


@pytest.fixture
def repo(tmp_path, monkeypatch):
    monkeypatch.setenv("SHASWEEP_HOME", str(tmp_path / "home"))
    return make_fake_repo(tmp_path)


def threaded_cluster(**resources: float) -> LocalCluster:
    """A scheduler plus one in-process worker (threads), standing in for a remote cluster."""
    return LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tcp://",
                        host="127.0.0.1", dashboard_address="127.0.0.1:0", resources=resources or None,
                        silence_logs=logging.ERROR)


def test_plan_is_checked_before_connecting(tmp_path, repo):
    run = make_run(repo, repo.shas[0], results_root=tmp_path)
    with pytest.raises(InvalidInputError, match="no runs"):
        dispatch_runs([], scheduler=None, continue_on_error=False)
    with pytest.raises(InvalidInputError, match=f"duplicate run_key in the plan: {run.run_key}"):
        dispatch_runs([run, run], scheduler=None, continue_on_error=False)
    other = make_run(repo, repo.shas[1], results_root=tmp_path, sweep_id="other")
    with pytest.raises(InvalidInputError, match="runs of one sweep expected"):
        dispatch_runs([run, other], scheduler=None, continue_on_error=False)


def test_bad_and_unreachable_scheduler(tmp_path, repo, monkeypatch):
    run = make_run(repo, repo.shas[0], results_root=tmp_path)
    with pytest.raises(InvalidInputError, match="not an address like tcp://HOST:PORT"):
        dispatch_runs([run], scheduler="localhost:8786", continue_on_error=False)
    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT_S", 1.0)
    port = cluster.free_port(45000)
    with pytest.raises(ClusterError, match=f"cannot reach the Dask scheduler at tcp://127.0.0.1:{port}"):
        dispatch_runs([run], scheduler=f"tcp://127.0.0.1:{port}", continue_on_error=False,
                      show_progress=False)


def test_cluster_without_bench_worker_fails_instead_of_hanging(tmp_path, repo, monkeypatch):
    monkeypatch.setattr(cluster, "WORKER_WAIT_S", 0.5)
    run = make_run(repo, repo.shas[0], results_root=tmp_path)
    with threaded_cluster() as no_gpu:
        with pytest.raises(ClusterError, match="holds resource GPU=1") as info:
            dispatch_runs([run], scheduler=no_gpu.scheduler_address, continue_on_error=False,
                          show_progress=False)
    assert "resources={}" in str(info.value)


def test_remote_scheduler_runs_on_its_bench_worker(tmp_path, repo):
    runs = [make_run(repo, sha, order=i, results_root=tmp_path / "results")
            for i, sha in enumerate(repo.shas)]
    with threaded_cluster(GPU=1) as remote:
        outcome = dispatch_runs(runs, scheduler=remote.scheduler_address, continue_on_error=False,
                            show_progress=False)
        assert outcome.workers == [worker.address for worker in remote.workers.values()]
    assert [o.status for o in outcome.runs] == ["ok", "ok"]


def test_cancel_event_stops_the_running_bench(tmp_path, repo):
    run = make_run(repo, repo.shas[0], results_root=tmp_path / "results", timeout_s=120,
                   extra_args=("--mode", "hang", "--child-pid-file", str(tmp_path / "pid")))
    with threaded_cluster(GPU=1) as remote, Client(remote) as client:
        future = client.submit(execute_run, run, pure=False, resources={"GPU": 1})
        while not (tmp_path / "pid").exists() and not future.done():  # a bench that died early: see outcome
            time.sleep(0.05)
        Event(cancel_event_name(run.sweep_id), client=client).set()
        outcome = future.result(timeout=30)
    assert outcome.status == "cancelled" and "killed its process group" in outcome.error


def test_a_finished_run_s_outcome_comes_with_its_progress_event_not_a_fetch(tmp_path, repo, monkeypatch):
    import distributed

    fetched: list[str] = []
    real_result = distributed.Future.result

    def result(self, *args, **kwargs):
        fetched.append(self.key)
        return real_result(self, *args, **kwargs)

    monkeypatch.setattr(distributed.Future, "result", result)
    runs = [make_run(repo, repo.shas[i % 2], order=i, results_root=tmp_path / "results") for i in range(3)]
    with threaded_cluster(GPU=1) as remote:
        outcome = dispatch_runs(runs, scheduler=remote.scheduler_address, continue_on_error=False,
                            show_progress=False)
    assert [o.status for o in outcome.runs] == ["ok"] * 3
    assert [o.runs_file for o in outcome.runs] == [
        str(tmp_path / "results" / "runs" / "sweep=test-sweep" / f"{run.run_key}.parquet") for run in runs]
    assert [key.rsplit("-", 1)[0] for key in fetched] == ["shasweep-host"], "only the host record was fetched"
    assert "throughput" in outcome.runs[0].reported, "the names the task reported"
