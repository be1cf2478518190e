"""``order: lockstep`` end to end: real ``shasweep run`` calls (spec, plan, the embedded Dask cluster,
the worker's round task, Parquet, the report) on the lockstep bench of ``fakebench``."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import yaml
from fakebench.fakerepo import make_lockstep_repo

from orchestrator.cli.main import main
from orchestrator.errors import (
    EXIT_GATE_FAILED,
    EXIT_GATE_INCONCLUSIVE,
    EXIT_INVALID,
    EXIT_OK,
    EXIT_RUN_FAILED,
)
from orchestrator.store.records import latest_sweep_id, read_record

pytestmark = pytest.mark.slow

DECIDED_OR_NOT = (EXIT_OK, EXIT_GATE_INCONCLUSIVE)  # every run ok, the (lenient) gate passed or undecided
COMMAND = ["{python}", "lockstep_bench.py", "--stream", "{stream}", "--control", "{control}",
           "--warmup", "{warmup}", "--measure", "{measure}"]


@pytest.fixture
def repo(tmp_path, monkeypatch):
    monkeypatch.setenv("SHASWEEP_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("SHASWEEP_LOCK", raising=False)
    monkeypatch.delenv("SHASWEEP_BENCH_CPUS", raising=False)
    found = make_lockstep_repo(tmp_path)
    monkeypatch.chdir(found.path)
    return found


def sweep(repo, *extra: str, **keys) -> list[str]:
    spec = {"name": "ls", "sides": {"old": {"ref": "HEAD~1"}, "new": {"ref": "HEAD"}}, "baseline": "old",
            "cases": ["fake"], "command": COMMAND, "params": {"warmup": 1, "measure": 4, "threads": 1},
            "repeats": 2, "order": "lockstep", "lockstep": {"blocks": 3, "block_steps": 2},
            "gates": [{"metric": "throughput", "min_ratio": 0.5}], "timeout_s": 120} | keys
    (repo.path / "sweep.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    return ["run", "sweep.yaml", "--no-progress", *extra]


def runs_of(repo) -> pd.DataFrame:
    return pd.read_parquet(repo.path / "results" / "runs").sort_values(["repeat", "side"])


def test_a_lockstep_sweep_pairs_block_by_block_and_reports_it(repo, capsys):
    code = main(sweep(repo))
    out = capsys.readouterr().out
    assert code in DECIDED_OR_NOT, out  # every run ok; the 2-round gate may stay inconclusive
    runs = runs_of(repo)
    assert list(runs["status"]) == ["ok"] * 4 and set(runs["ran_in"]) == {"lockstep"}
    assert (runs["steps"] == 6).all()
    report = next((repo.path / "results" / "reports").glob("*.md")).read_text()
    assert "## Lockstep" in report and "fake: 4 runs lockstep" in report
    verdicts = json.loads(next((repo.path / "results" / "reports").glob("*.verdicts.json")).read_text())
    assert "block-pair medians" in json.dumps(verdicts)


def test_a_sha_without_the_control_channel_stops_the_sweep_with_exit_2(repo, capsys):
    command = [*COMMAND, "--no-control"]  # both commits' benches then ignore the FIFO: an older bench
    code = main(sweep(repo, command=command))
    err = capsys.readouterr().err
    assert code == EXIT_INVALID
    assert "lockstep.fallback:" in err and "does not declare the control channel" in err
    assert f"(SHA {repo.shas[0][:12]})" in err or f"(SHA {repo.shas[1][:12]})" in err
    record = read_record(repo.path / "results", latest_sweep_id(repo.path / "results"))
    assert record.status == "stopped" and len(runs_of(repo)) == 2, "it stopped at the first round"


def test_with_fallback_interleaved_the_report_says_the_case_ran_interleaved(repo, capsys):
    code = main(sweep(repo, command=[*COMMAND, "--no-control"],
                      lockstep={"blocks": 3, "block_steps": 2, "fallback": "interleaved"}))
    out = capsys.readouterr().out
    assert code in DECIDED_OR_NOT, out
    runs = runs_of(repo)
    assert set(runs["ran_in"]) == {"interleaved"} and (runs["steps"] == 4).all()
    report = next((repo.path / "results" / "reports").glob("*.md")).read_text()
    assert "fake: 4 runs interleaved (fell back: side 'old'" in report


def test_a_bench_failing_mid_round_fails_the_round_and_resume_runs_it_again_whole(repo, capsys):
    crash = repo.path.parent / "crash-now"
    crash.write_text("")
    command = [*COMMAND, "--crash-at-step", "5", "--crash-file", str(crash)]
    assert main(sweep(repo, command=command, repeats=1)) == EXIT_RUN_FAILED
    failed = runs_of(repo)
    assert list(failed["status"]) == ["failed", "failed"] and failed["throughput"].isna().all()
    assert any("killed with its lockstep round" in e for e in failed["error"])
    crash.unlink()
    sweep_id = latest_sweep_id(repo.path / "results")
    capsys.readouterr()
    assert main(["run", "--resume", sweep_id, "--no-progress"]) in DECIDED_OR_NOT
    assert "resuming 2 of 2 runs" in capsys.readouterr().out
    again = runs_of(repo)
    assert list(again["status"]) == ["ok", "ok"] and list(again["run_key"]) == list(failed["run_key"])


def test_a_gate_on_cpu_ms_reads_the_blocks_cpu_time_and_fails_1_5x_the_work(repo, capsys):
    """The new commit does 1.5x the hashing per step: its CPU time per step (``cpu_ms``, which the bench
    helper reports in every step) reads about 1.5 from the block pairs, whatever else the host does
    (on a busy one in more rounds: the sweep is adaptive)."""
    code = main(sweep(repo, command=[*COMMAND, "--work", "hash"], repeats=3, max_repeats=10,
                      gates=[{"metric": "cpu_ms", "max_ratio": 1.1}]))
    out = capsys.readouterr().out
    assert code == EXIT_GATE_FAILED, out
    runs = runs_of(repo)
    assert runs["cpu_ms"].gt(0).all() and runs["thread_cpu_ms"].gt(0).all()
    for cell in runs["blocks"]:
        measured = [b for b in json.loads(cell) if not b["warmup"]]
        assert all(b["phases"]["cpu_ms"] > 0 for b in measured), "each block carries its CPU time per step"
    report = read_record(repo.path / "results", latest_sweep_id(repo.path / "results"))
    verdicts = json.loads(next((repo.path / "results" / "reports").glob("*.verdicts.json")).read_text())
    (gate,) = verdicts["verdicts"]
    assert gate["metric"] == "cpu_ms" and gate["verdict"] == "FAIL", gate
    assert 1.3 < gate["ratio"] < 1.7 and "block-pair medians" in json.dumps(verdicts)
    assert report.status == "finished"
    md = next((repo.path / "results" / "reports").glob("*.md")).read_text()
    assert "| 0 | cpu_ms | fake | new |" in md, "the gates table names the metric the gate read"
