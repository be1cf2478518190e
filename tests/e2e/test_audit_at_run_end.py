"""The audit verdict is the worker's: an audit failure is stored, stops the sweep, and resume re-runs it."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import pandas as pd
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "orchestrator"))
from fakebench.fakerepo import COMMAND, make_fake_repo  # noqa: E402

from orchestrator.cli.main import main  # noqa: E402
from orchestrator.errors import EXIT_RUN_FAILED  # noqa: E402


def test_audit_failure_stops_the_sweep_and_resume_runs_it_again(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SHASWEEP_HOME", str(tmp_path / "home"))
    repo = make_fake_repo(tmp_path)
    monkeypatch.chdir(repo.path)
    honest = tmp_path / "bench-is-honest-now"
    sweep = {
        "name": "audited", "sides": {"old": {"ref": "HEAD~1"}, "new": {"ref": "HEAD"}}, "baseline": "old",
        "cases": ["sac/fake/none"], "known": {"tasks": [], "sims": []},
        "command": [*COMMAND, "--inflate-unless", str(honest)],
        "params": {"num_envs": 8, "warmup": 1, "measure": 4, "threads": 1}, "repeats": 2, "timeout_s": 60,
        "continue_on_error": False,
    }
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(sweep))

    assert main(["run", str(path), "--no-progress"]) == EXIT_RUN_FAILED
    out = capsys.readouterr().out
    results = repo.path / "results"
    (record_path,) = (results / "sweeps").glob("audited-*.json")
    record = json.loads(record_path.read_text())
    assert record["status"] == "stopped" and "run #0" in record["stopped_reason"]
    assert "audit_failed" in record["stopped_reason"]
    assert [o["status"] for o in record["outcomes"]] == ["audit_failed"] + ["cancelled"] * 3
    runs = pd.read_parquet(results / "runs")
    assert runs["status"].tolist() == ["audit_failed"] and bool(runs["audited"].iloc[0])
    assert "summary throughput" in runs["error"].iloc[0] and "audit_failed" in out
    for written in [record_path, *(results / "reports").iterdir()]:
        assert stat.S_IMODE(written.stat().st_mode) == 0o644, written

    honest.touch()
    assert main(["run", "--resume", "latest", "--no-progress"]) != EXIT_RUN_FAILED
    assert "resuming 4 of 4 runs" in capsys.readouterr().out
    runs = pd.read_parquet(results / "runs")
    assert len(runs) == 4 and (runs["status"] == "ok").all() and runs["audited"].all()
