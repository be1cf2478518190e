"""A fleet of bench hosts on loopback: one real ``shasweep scheduler`` and ``shasweep worker`` processes
with distinct ``SHASWEEP_HOST_ID`` and homes. Rounds run in parallel across hosts and strictly serially
within each; a worker killed with SIGKILL mid-round has its round redone whole on another host; a
deadline stops the rounds running on every host, none of them counted; the default ``hosts: one``
keeps a sweep on one host; bad ``hosts`` values exit 2 before any run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "orchestrator"))
from fakebench.fakerepo import COMMAND, make_fake_repo, make_lockstep_repo  # noqa: E402
from fakebench.waits import wait_for  # noqa: E402
from test_entrypoints import Served, serving, shasweep_argv  # noqa: E402

from orchestrator.cli.main import main  # noqa: E402
from orchestrator.dispatch.cluster import free_port  # noqa: E402
from orchestrator.errors import EXIT_INVALID  # noqa: E402

STEP_MS = 150  # the fake bench sleeps, so the speed-up does not depend on free CPUs
SWEEP_TIMEOUT_S = 300
DEADLINE_S = 75.0  # two rounds of two runs of ~3 s each, one per host, end before it, even on a loaded host


def sweep_file(repo: Path, name: str, *, cases: int, repeats: int, measure: int = 8, **extra) -> Path:
    sweep = {"name": name, "sides": {"old": {"ref": "HEAD~1"}, "new": {"ref": "HEAD"}}, "baseline": "old",
             "cases": [f"sac/fake/c{i}" for i in range(cases)], "known": {"tasks": [], "sims": []},
             "command": [*COMMAND, "--step-ms", str(STEP_MS)],
             "params": {"num_envs": 8, "warmup": 0, "measure": measure, "threads": 1},
             "repeats": repeats, "timeout_s": 120, **extra}
    path = repo / f"{name}.yaml"
    path.write_text(yaml.safe_dump(sweep, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def scheduler(tmp_path_factory) -> Iterator[Served]:
    logs = tmp_path_factory.mktemp("scheduler")
    port = free_port(19786)
    dashboard = free_port(port + 1)
    argv = shasweep_argv("scheduler", "--port", str(port), "--dashboard-address", f"127.0.0.1:{dashboard}")
    with serving(argv, logs / "scheduler.log") as served:
        yield served


@contextmanager
def workers(scheduler: Served, tmp_path: Path, host_ids: list[str]) -> Iterator[dict[str, Served]]:
    """One ``shasweep worker`` per host id, each with its own home (so its own worktrees and lock)."""
    with ExitStack() as stack:
        started = {}
        for ident in host_ids:
            env = {"SHASWEEP_HOST_ID": ident, "SHASWEEP_HOME": str(tmp_path / f"home-{ident}")}
            argv = shasweep_argv("worker", scheduler.address, "--name", ident)
            started[ident] = stack.enter_context(serving(argv, tmp_path / f"worker-{ident}.log", env=env))
        yield started


def read_runs(repo: Path) -> pd.DataFrame:
    return pd.read_parquet(repo / "results" / "runs").sort_values("started_at").reset_index(drop=True)


def assert_rounds_whole_and_serial(runs: pd.DataFrame) -> None:
    """Every round (repeat) on exactly one host; on each host no two runs overlap."""
    per_round = runs.groupby("repeat")["host_id"].nunique()
    assert (per_round == 1).all(), f"a round mixed hosts: {per_round.to_dict()}"
    for host, mine in runs.groupby("host_id"):
        starts, ends = mine["started_at"].tolist(), mine["ended_at"].tolist()
        assert all(s >= e for s, e in zip(starts[1:], ends[:-1], strict=True)), f"runs overlapped on {host}"


def test_rounds_run_in_parallel_across_three_hosts(scheduler, tmp_path, monkeypatch, capsys):
    repo = make_fake_repo(tmp_path)
    sweep = sweep_file(repo.path, "fleet", cases=3, repeats=3, hosts="all")  # 18 runs, 3 rounds
    monkeypatch.chdir(repo.path)
    with workers(scheduler, tmp_path, ["h1", "h2", "h3"]):
        code = main(["run", str(sweep), "--scheduler", scheduler.address, "--no-progress"])
        out = capsys.readouterr().out
        assert code == 0, out[-3000:]
        assert main(["status", "--scheduler", scheduler.address]) == 0
        status = capsys.readouterr().out
    runs = read_runs(repo.path)
    assert len(runs) == 18 and runs["run_key"].is_unique and (runs["status"] == "ok").all()
    assert set(runs["host_id"]) == {"h1", "h2", "h3"}, "each of the three rounds went to its own host"
    assert_rounds_whole_and_serial(runs)
    span = (runs["ended_at"].max() - runs["started_at"].min()).total_seconds()
    serial = runs["wall_s"].sum()  # what the same runs take one after the other
    assert span < 0.6 * serial, f"18 runs on 3 hosts took {span:.1f} s, serially {serial:.1f} s"
    for host in ("h1", "h2", "h3"):
        assert f"host {host}:" in status, status
    (record,) = [json.loads(p.read_text()) for p in (repo.path / "results" / "sweeps").glob("*.json")]
    assert record["hosts"] == ["h1", "h2", "h3"] and record["requeued_rounds"] == []
    report = (repo.path / "results" / "reports" / f"{record['sweep_id']}.md").read_text()
    assert "## Hosts" in report and "- hosts: h1, h2, h3" in report, report
    assert "median throughput per host" in report


def test_a_worker_killed_mid_round_has_its_round_redone_whole_elsewhere(scheduler, tmp_path):
    repo = make_fake_repo(tmp_path)
    sweep = sweep_file(repo.path, "killed", cases=2, repeats=3, hosts=["h1", "h2", "h3"])  # rounds of 4
    results = repo.path / "results" / "runs"

    def finished_on(host: str) -> bool:
        files = list(results.glob("*/[!.]*.parquet")) if results.is_dir() else []
        return any(pq.read_table(f, columns=["host_id"]).column(0)[0].as_py() == host for f in files)

    with workers(scheduler, tmp_path, ["h1", "h2", "h3"]) as started:
        log = tmp_path / "client.out"
        with open(log, "wb") as sink:
            client = subprocess.Popen(
                shasweep_argv("run", str(sweep), "--scheduler", scheduler.address, "--no-progress"),
                cwd=repo.path, stdout=sink, stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONFAULTHANDLER": "1"})  # SIGABRT dumps where a hung client is
        wait_for(lambda: finished_on("h1"), "a run finished on host h1", timeout_s=240)
        os.kill(started["h1"].proc.pid, signal.SIGKILL)  # mid-round: h1's round has 4 runs
        try:
            client.wait(timeout=SWEEP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            client.send_signal(signal.SIGABRT)
            client.wait(timeout=30)
            raise
        finally:
            client.kill()
            out = log.read_text()
            print(out)
    assert client.returncode == 0, out[-3000:]
    assert "host h1: its bench worker died" in out
    runs = read_runs(repo.path)
    assert len(runs) == 12 and runs["run_key"].is_unique and (runs["status"] == "ok").all()
    assert "h1" not in set(runs["host_id"]), "h1's partial round was superseded, not kept"
    assert_rounds_whole_and_serial(runs)
    superseded = list((repo.path / "results" / "superseded").glob("sweep=*/runs/*.h1.*.parquet"))
    assert superseded, "the runs h1 finished before it died are kept aside"
    (record,) = [json.loads(p.read_text()) for p in (repo.path / "results" / "sweeps").glob("*.json")]
    assert len(record["requeued_rounds"]) == 1 and "on host h1" in record["requeued_rounds"][0]


def test_a_deadline_stops_the_rounds_running_on_every_host_and_counts_none_of_them(scheduler, tmp_path,
                                                                                   monkeypatch):
    from orchestrator.dispatch.dispatcher import DEADLINE_REASON
    from orchestrator.session import RunOptions, plan_sweep, run_sweep

    repo = make_fake_repo(tmp_path)
    slow = tmp_path / "slow"  # while it exists each of a run's 20 steps takes 3 s: a run over a minute
    sweep = sweep_file(repo.path, "deadline", cases=1, repeats=4, measure=20, hosts="all",
                       command=[*COMMAND, "--step-ms", str(STEP_MS), "--slow-while", str(slow)])
    results = repo.path / "results" / "runs"

    def two_rounds_done() -> bool:
        files = list(results.glob("*/[!.]*.parquet")) if results.is_dir() else []
        return sum(pq.read_table(f, columns=["status"]).column(0)[0].as_py() == "ok" for f in files) >= 4

    def slow_down_after_two_rounds() -> None:
        wait_until = time.monotonic() + DEADLINE_S
        while not two_rounds_done() and time.monotonic() < wait_until:
            time.sleep(0.05)
        slowed.append(two_rounds_done())  # False: the hosts took longer than DEADLINE_S for two rounds
        slow.touch()

    # rounds 0 and 1 run at once, one per host; every run after them takes over a minute, so at the
    # deadline both hosts are in a round (2 and 3, or one of them and the unfinished one of 0 and 1)
    slowed: list[bool] = []
    monkeypatch.chdir(repo.path)
    with workers(scheduler, tmp_path, ["h1", "h2"]):
        watcher = threading.Thread(target=slow_down_after_two_rounds, daemon=True)
        watcher.start()
        run = run_sweep(plan_sweep(str(sweep)), RunOptions(scheduler=scheduler.address, progress=False,
                                                           deadline=time.monotonic() + DEADLINE_S))
        watcher.join()
    assert slowed == [True], f"two rounds did not end within {DEADLINE_S:g} s of the sweep's start"
    record = run.record()
    cut = record.adaptive.cut
    assert record.status == "finished" and cut == record.adaptive.rounds and cut in (1, 2), record.adaptive
    assert record.adaptive.ended.startswith(f"{DEADLINE_REASON} during round {cut + 1}, which is not counted")
    counted = sorted((o.repeat, o.status) for o in record.outcomes)
    assert counted == [(r, "ok") for r in range(cut) for _side in ("old", "new")], counted
    runs = read_runs(repo.path)
    stopped = runs[runs["status"] == "cancelled"]
    assert set(stopped["host_id"]) == {"h1", "h2"}, "the round running on each host was stopped"
    assert (stopped["repeat"] >= cut).all() and set(runs["status"]) <= {"ok", "cancelled"}
    assert_rounds_whole_and_serial(runs)
    report = run.report()
    assert report.missing == 0 and report.failures.empty, "the stopped rounds are not failures"


def test_lockstep_rounds_run_whole_on_one_host_each(scheduler, tmp_path, monkeypatch, capsys):
    """A lockstep sweep on two hosts: each round (both cases' lockstep rounds) on one host, and on a
    host no two blocks of any process ever overlap."""
    repo = make_lockstep_repo(tmp_path)
    command = ["{python}", "lockstep_bench.py", "--stream", "{stream}", "--control", "{control}",
               "--warmup", "{warmup}", "--measure", "{measure}"]
    sweep = sweep_file(repo.path, "lockstep", cases=2, repeats=2, hosts="all", command=command,
                       known={"algos": [], "tasks": [], "sims": []}, params={"warmup": 1, "measure": 4},
                       order="lockstep", lockstep={"blocks": 3, "block_steps": 2})
    monkeypatch.chdir(repo.path)
    with workers(scheduler, tmp_path, ["h1", "h2"]):
        code = main(["run", str(sweep), "--scheduler", scheduler.address, "--no-progress"])
    assert code in (0, 4), capsys.readouterr().out[-3000:]
    runs = read_runs(repo.path)
    assert len(runs) == 8 and (runs["status"] == "ok").all() and set(runs["ran_in"]) == {"lockstep"}
    assert (runs.groupby("repeat")["host_id"].nunique() == 1).all(), "a round mixed hosts"
    for host, mine in runs.groupby("host_id"):
        spans = sorted((b["started"], b["ended"]) for blocks in mine["blocks"] for b in json.loads(blocks))
        assert all(later[0] >= earlier[1] for earlier, later in zip(spans, spans[1:], strict=False)), host


def test_hosts_one_keeps_every_run_on_one_host(scheduler, tmp_path, monkeypatch, capsys):
    repo = make_fake_repo(tmp_path)
    sweep = sweep_file(repo.path, "one", cases=1, repeats=3, measure=2)
    monkeypatch.chdir(repo.path)
    with workers(scheduler, tmp_path, ["h1", "h2"]):
        code = main(["run", str(sweep), "--scheduler", scheduler.address, "--no-progress"])
    assert code == 0, capsys.readouterr().out[-3000:]
    runs = read_runs(repo.path)
    assert len(runs) == 6 and set(runs["host_id"]) == {"h1"}, runs["host_id"].tolist()


@pytest.mark.parametrize("hosts, workers_up, message", [
    (["h1", "nope"], ["h1", "h2"], "hosts: host 'nope' has no bench worker connected to"),
    ("all", [], "hosts: no bench worker is connected to"),
])
def test_bad_hosts_exit_2_naming_the_connected_hosts(scheduler, tmp_path, monkeypatch, capsys,
                                                     hosts, workers_up, message):
    repo = make_fake_repo(tmp_path)
    sweep = sweep_file(repo.path, "bad", cases=1, repeats=1, hosts=hosts)
    monkeypatch.chdir(repo.path)
    with workers(scheduler, tmp_path, workers_up):
        code = main(["run", str(sweep), "--scheduler", scheduler.address, "--no-progress"])
    err = capsys.readouterr().err
    assert code == EXIT_INVALID and message in err, err
    assert f"(connected hosts: {', '.join(workers_up) or 'none'})" in err
    assert not (repo.path / "results" / "runs").exists(), "no run started"
    assert not list((repo.path / "results" / "sweeps").glob("*.json")), "no record left behind"
