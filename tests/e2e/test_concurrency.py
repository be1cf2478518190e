"""Two sweeps submitted at once to one scheduler with two bench workers on one host: the host lock
keeps their bench runs from overlapping, and both complete."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import pandas as pd
import yaml
from distributed import LocalCluster

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "orchestrator"))
from fakebench.fakerepo import COMMAND, make_fake_repo  # noqa: E402

from orchestrator.dispatch.cluster import BENCH_RESOURCE  # noqa: E402

SWEEP = {"name": "concurrent", "sides": {"old": {"ref": "HEAD~1"}, "new": {"ref": "HEAD"}}, "baseline": "old",
         "cases": ["sac/fake/none"], "known": {"tasks": [], "sims": []},
         "command": [*COMMAND, "--step-ms", "30"],
         "params": {"num_envs": 8, "warmup": 0, "measure": 5, "threads": 1}, "repeats": 3, "timeout_s": 60}


def test_two_sweeps_at_once_never_overlap_and_both_complete(tmp_path, monkeypatch):
    monkeypatch.setenv("SHASWEEP_HOME", str(tmp_path / "home"))  # one host lock for both workers
    repo = make_fake_repo(tmp_path)
    sweep = repo.path / "sweep.yaml"
    sweep.write_text(yaml.safe_dump(SWEEP, sort_keys=False))
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, resources={BENCH_RESOURCE: 1},
                      host="127.0.0.1", dashboard_address="127.0.0.1:0",
                      silence_logs=logging.ERROR) as cluster:
        cmd = [sys.executable, "-m", "orchestrator.cli", "run", str(sweep), "--scheduler",
               cluster.scheduler_address, "--no-progress"]
        clients = [subprocess.Popen(cmd, cwd=repo.path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    text=True) for _ in range(2)]
        outputs = [client.communicate(timeout=240)[0] for client in clients]
    assert [client.returncode for client in clients] == [0, 0], outputs

    records = [json.loads(p.read_text()) for p in (repo.path / "results" / "sweeps").glob("*.json")]
    assert len({r["sweep_id"] for r in records}) == 2 and {r["status"] for r in records} == {"finished"}
    runs = pd.read_parquet(repo.path / "results" / "runs").sort_values("started_at")
    assert len(runs) == 12 and runs["run_key"].is_unique and (runs["status"] == "ok").all()
    assert runs["lock_wait_s"].notna().all(), "every run records its wait for the host lock"
    starts, ends = runs["started_at"].tolist(), runs["ended_at"].tolist()
    assert all(s >= e for s, e in zip(starts[1:], ends[:-1], strict=True)), "bench runs overlapped"
    spans = runs.groupby("sweep_id").agg(first=("started_at", "min"), last=("ended_at", "max"))
    assert spans["first"].max() < spans["last"].min(), "the two sweeps did not run at the same time"
