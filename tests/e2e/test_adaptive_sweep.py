"""Adaptive rounds end to end: ``shasweep run`` on an embedded cluster with the fake bench at two
commits. A clear cell (a side twice as fast) stops after the first ``repeats`` rounds; an undecidable
one (the baseline's own commit against a 0.1 % band) runs on to ``max_repeats``; a killed adaptive
sweep resumed completes to the same runs; a deadline keeps a round from starting, and stops one still
running at it, which is then not counted."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import psutil
import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "orchestrator"))
from fakebench.fakerepo import COMMAND, FakeRepo, make_fake_repo  # noqa: E402
from fakebench.waits import is_gone, wait_for  # noqa: E402

from orchestrator.cli.main import main  # noqa: E402
from orchestrator.errors import EXIT_GATE_INCONCLUSIVE  # noqa: E402

REPEATS, MAX_REPEATS = 3, 6
# fast: 2 ms a step against the baseline's 4 ms, a 2x throughput that the first look decides;
# twin: the baseline's commit, gated to within 0.1 % at 99.999 %: no number of rounds here decides it
EXPECTED_RUNS = {"base": MAX_REPEATS, "fast": REPEATS, "twin": MAX_REPEATS}
DEADLINE_S = 75.0  # the first round's 3 runs of a few seconds end before it, even on a loaded host


@pytest.fixture
def repo(tmp_path, monkeypatch) -> FakeRepo:
    monkeypatch.setenv("SHASWEEP_HOME", str(tmp_path / "home"))
    repo = make_fake_repo(tmp_path)
    sweep = {"name": "adaptive", "sides": {"base": {"ref": "HEAD~1"}, "fast": {"ref": "HEAD"},
                                          "twin": {"ref": "HEAD~1"}},
             "baseline": "base", "cases": ["sac/fake/none"], "known": {"tasks": [], "sims": []},
             "command": list(COMMAND), "repeats": REPEATS, "max_repeats": MAX_REPEATS, "timeout_s": 60,
             "params": {"num_envs": 8, "warmup": 1, "measure": 10, "threads": 1},
             "gates": [{"metric": "throughput", "side": "fast", "min_ratio": 0.9},
                       {"metric": "throughput", "side": "twin", "min_ratio": 0.999, "max_ratio": 1.001,
                        "confidence": 0.99999}]}
    (repo.path / "sweep.yaml").write_text(yaml.safe_dump(sweep, sort_keys=False))
    monkeypatch.chdir(repo.path)
    return repo


def check_complete(repo: FakeRepo) -> dict:
    """Every expected run ok exactly once, rounds 0.. per side; returns the record."""
    rows = pd.read_parquet(repo.path / "results" / "runs")
    assert rows["run_key"].is_unique and (rows["status"] == "ok").all()
    assert rows.groupby("side").size().to_dict() == EXPECTED_RUNS
    for side, count in EXPECTED_RUNS.items():
        assert sorted(rows.loc[rows["side"] == side, "repeat"]) == list(range(count))
    (record_path,) = (repo.path / "results" / "sweeps").glob("adaptive-*.json")
    record = json.loads(record_path.read_text())
    assert record["status"] == "finished" and record["planned_runs"] == sum(EXPECTED_RUNS.values())
    assert [o["status"] for o in record["outcomes"]] == ["ok"] * sum(EXPECTED_RUNS.values())
    assert record["adaptive"]["ended"] == "max_repeats reached"
    return record


def test_a_clear_cell_stops_early_and_a_close_one_runs_to_max_repeats(repo, capsys):
    assert main(["run", "sweep.yaml", "--no-progress"]) == EXIT_GATE_INCONCLUSIVE
    check_complete(repo)
    report = (next((repo.path / "results" / "reports").glob("adaptive-*.md"))).read_text()
    assert "look 1 of 4, after 3 rounds" in report, "the fast side was decided at the first look"
    assert "look 4 of 4, after 6 rounds" in report
    # one ratio: the baseline ran 6 rounds, fast 3; the table, the gate, compare and verdicts.json
    # all give the ratio of the rounds both ran
    capsys.readouterr()
    (sweep_id,) = [p.stem for p in (repo.path / "results" / "sweeps").glob("adaptive-*.json")]
    verdicts = json.loads((repo.path / "results" / "reports" / f"{sweep_id}.verdicts.json").read_text())
    gate = next(v for v in verdicts["verdicts"] if v["side"] == "fast")
    csv = pd.read_csv(repo.path / "results" / "reports" / f"{sweep_id}.csv").set_index(["side", "metric"])
    assert csv.loc[("fast", "throughput"), "ratio"] == pytest.approx(gate["ratio"])
    assert main(["compare", sweep_id, sweep_id]) == 0
    assert f"{gate['ratio']:.3f} -> {gate['ratio']:.3f}" in capsys.readouterr().out
    assert "a row a gate judges states the gate's figure, its interval read at" in " ".join(report.split()), \
        "the report says why the gate's interval differs"


def test_a_killed_adaptive_sweep_resumed_completes_it(repo, tmp_path):
    home = tmp_path / "home"
    out = open(tmp_path / "client.out", "wb")  # noqa: SIM115 - the child writes to it
    argv = [sys.executable, "-m", "orchestrator.cli", "run", "sweep.yaml", "--no-progress"]
    client = subprocess.Popen(argv, cwd=repo.path, stdout=out, stderr=subprocess.STDOUT)
    adaptive_started = 3 * REPEATS + 2  # the second run of the first adaptive round
    wait_for(lambda: len(list((home / "logs").glob("*/*/stream.jsonl"))) >= adaptive_started,
             "an adaptive round to start", timeout_s=240)
    descendants = psutil.Process(client.pid).children(recursive=True)
    client.send_signal(signal.SIGKILL)
    client.wait()
    for process in descendants:
        assert wait_for(lambda p=process: is_gone(p.pid), f"{process.pid} to exit"), "orphan process"
    (record_path,) = (repo.path / "results" / "sweeps").glob("adaptive-*.json")
    sweep_id = record_path.stem
    assert json.loads(record_path.read_text())["status"] == "running"
    before = pd.read_parquet(repo.path / "results" / "runs")
    assert len(before) < sum(EXPECTED_RUNS.values())

    assert main(["run", "--resume", sweep_id, "--no-progress"]) == EXIT_GATE_INCONCLUSIVE
    record = check_complete(repo)
    assert len(record["resumed"]) == 1
    after = pd.read_parquet(repo.path / "results" / "runs").set_index("run_key")
    ok_before = before[before["status"] == "ok"]
    assert after.loc[ok_before["run_key"], "started_at"].tolist() == ok_before["started_at"].tolist(), (
        "runs already ok were not run again")


def test_a_deadline_stops_the_rounds_before_one_that_would_end_after_it(repo, monkeypatch):
    from orchestrator.dispatch.adaptive import OUT_OF_TIME, AdaptiveRounds
    from orchestrator.session import RunOptions, plan_sweep, run_sweep

    # the planned rounds end long before the deadline; the first adaptive round, estimated at a day,
    # would end after it: none starts
    monkeypatch.setattr(AdaptiveRounds, "_round_s", lambda self: 86400.0)
    run = run_sweep(plan_sweep("sweep.yaml"), RunOptions(progress=False, deadline=time.monotonic() + 3600))
    record = run.record()
    adaptive = record.adaptive
    assert (adaptive.ended, adaptive.rounds, adaptive.cut) == (OUT_OF_TIME, REPEATS, None)
    rows = pd.read_parquet(repo.path / "results" / "runs")
    assert rows.groupby("side").size().to_dict() == {"base": REPEATS, "fast": REPEATS, "twin": REPEATS}
    assert run.report().exit_code == EXIT_GATE_INCONCLUSIVE, "the twin gate stays undecided"


def test_a_round_running_at_the_deadline_is_stopped_and_not_counted(repo, tmp_path):
    from orchestrator.dispatch.dispatcher import DEADLINE_REASON
    from orchestrator.session import RunOptions, plan_sweep, run_sweep

    slow = tmp_path / "slow"  # while it exists each step of the bench takes 3 s: a run 33 s
    sweep = yaml.safe_load((repo.path / "sweep.yaml").read_text())
    sweep["command"] = [*COMMAND, "--slow-while", str(slow)]
    (repo.path / "sweep.yaml").write_text(yaml.safe_dump(sweep, sort_keys=False))
    runs = repo.path / "results" / "runs"

    def first_round_done() -> bool:
        if not runs.is_dir() or not any(runs.rglob("*.parquet")):
            return False
        rows = pd.read_parquet(runs)
        return bool(((rows["repeat"] == 0) & (rows["status"] == "ok")).sum() == 3)

    def slow_down_after_the_first_round() -> None:
        deadline = time.monotonic() + DEADLINE_S
        while not first_round_done() and time.monotonic() < deadline:
            time.sleep(0.05)
        slowed.append(first_round_done())  # False: the host took longer than DEADLINE_S for round 1
        slow.touch()

    # every run after the first round takes 33 s: the deadline comes during the second round
    slowed: list[bool] = []
    watcher = threading.Thread(target=slow_down_after_the_first_round, daemon=True)
    watcher.start()
    run = run_sweep(plan_sweep("sweep.yaml"),
                    RunOptions(progress=False, deadline=time.monotonic() + DEADLINE_S))
    watcher.join()
    assert slowed == [True], f"the first round did not end within {DEADLINE_S:g} s of the sweep's start"
    record = run.record()
    assert record.status == "finished" and record.adaptive.cut == record.adaptive.rounds == 1
    assert record.adaptive.ended.startswith(f"{DEADLINE_REASON} during round 2, which is not counted: ")
    assert [(o.repeat, o.status) for o in record.outcomes] == [(0, "ok")] * 3 and record.planned_runs == 3
    rows = pd.read_parquet(runs)
    assert set(rows.loc[rows["repeat"] == 1, "status"]) <= {"ok", "cancelled"}, "kept on disk, not counted"
    assert (rows.loc[rows["repeat"] == 1, "status"] == "cancelled").any()
    report = run.report()
    assert report.missing == 0 and report.failures.empty, "the stopped round is not a failure"
    assert {case_side: ok for case_side, (ok, _) in report.counts.items()} == {
        ("sac/fake/none", side): 1 for side in ("base", "fast", "twin")}
    assert report.exit_code == EXIT_GATE_INCONCLUSIVE, "one round decides nothing"
