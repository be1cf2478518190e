"""Waivers: `shasweep waive` and the YAML's `waivers` accept a gate's FAIL; revocations; the exit code;
the record's append-only log under a concurrent writer."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from dataclasses import replace

import pandas as pd
import pytest
import yaml
from fakebench.fakerepo import COMMAND, make_fake_repo
from fakebench.waits import wait_for
from test_report import GO2, write_go2_runs, write_sweep

from orchestrator.analysis import stats
from orchestrator.analysis.verdicts import GateVerdict, Verdict, gates_exit_code
from orchestrator.cli.main import main
from orchestrator.errors import EXIT_GATE_FAILED, EXIT_GATE_INCONCLUSIVE, EXIT_INVALID, EXIT_OK
from orchestrator.spec.schema import WaiverSpec
from orchestrator.store.records import read_record, record_path, write_record

SWEEP = "ab-20260101T000000"
# cand/base throughput is 2.0 [>1.5]: gate 0 FAILs; physics_ms is 0.5: gate 1 PASSes.
GATES = [{"metric": "throughput", "max_ratio": 1.5}, {"metric": "physics_ms", "max_ratio": 0.6}]


@pytest.fixture
def root(tmp_path):
    write_sweep(tmp_path, SWEEP, GATES, [GO2])
    write_go2_runs(tmp_path, SWEEP)
    return tmp_path


def waive(root, *args: str) -> int:
    return main(["waive", SWEEP, "--results", str(root), *args])


def report(root, capsys, *args: str) -> tuple[int, str]:
    """The exit code and the Markdown report it wrote (the terminal shows a compact rendering)."""
    capsys.readouterr()
    code = main(["report", SWEEP, "--results", str(root), *args])
    printed = capsys.readouterr().out
    return code, (root / "reports" / f"{SWEEP}.md").read_text() + printed


def test_a_waived_fail_no_longer_fails_the_sweep(root, capsys):
    assert report(root, capsys)[0] == EXIT_GATE_FAILED
    assert waive(root, "--case", GO2, "--side", "cand", "--gate", "0", "--reason", "known slow path",
                 "--by", "release-board") == EXIT_OK
    assert "release-board waived FAILs of gate 0, case sac/go2_joystick_flat/mujoco, side cand" in \
        capsys.readouterr().out
    code, md = report(root, capsys, "--format", "html")
    assert code == EXIT_OK
    assert "| 0 | throughput | sac/go2_joystick_flat/mujoco | cand | <= 1.5x | 2.000 | " \
           "**FAIL (waived: known slow path)** |" in md
    assert "gates: PASS 1 / FAIL 0 / INCONCLUSIVE 0 / WAIVED 1" in md
    assert "## Waivers" in md and "| release-board | waive | gate 0, case sac/go2_joystick_flat/mujoco, " \
                                  "side cand | known slow path | in force: waives 1 FAIL(s) |" in md
    page = (root / "reports" / f"{SWEEP}.html").read_text()
    assert '<td class="waived">FAIL (waived: known slow path)</td>' in page
    (entry,) = read_record(root, SWEEP).waivers
    assert entry.by == "release-board" and entry.time.endswith("+00:00")


def test_revoke_appends_and_restores_the_fail(root, capsys):
    assert waive(root, "--case", GO2, "--reason", "accepted for 0.4") == EXIT_OK
    first = read_record(root, SWEEP).waivers[0]
    assert report(root, capsys)[0] == EXIT_OK, "no --side/--gate: every gate of every side"
    assert waive(root, "--case", GO2, "--revoke", "--reason", "fixed upstream") == EXIT_OK
    log = read_record(root, SWEEP).waivers
    assert log[0] == first and [e.action for e in log] == ["waive", "revoke"], "earlier entries untouched"
    code, md = report(root, capsys)
    assert code == EXIT_GATE_FAILED and "**FAIL**" in md and "(waived" not in md.split("## Waivers")[0]
    assert "| revoked |" in md and "| revocation |" in md
    assert waive(root, "--case", GO2, "--revoke", "--reason", "again") == EXIT_INVALID
    assert "no waiver in force for every gate, case sac/go2_joystick_flat/mujoco, every side" in \
        capsys.readouterr().err


@pytest.mark.parametrize("args, message", [
    (["--case", "sac/nope/mujoco"], "case 'sac/nope/mujoco' is not one of the sweep's cases"),
    (["--case", GO2, "--side", "base"], "side 'base' has no gate verdicts"),
    (["--case", GO2, "--side", "other"], "side 'other' has no gate verdicts"),
    (["--case", GO2, "--gate", "2"], "gate 2 does not exist; the sweep's gates are 0..1"),
    (["--case", GO2, "--reason", " "], "a waiver needs a reason"),
])
def test_a_waiver_naming_no_such_verdict_is_invalid_input(root, capsys, args, message):
    before = record_path(root, SWEEP).read_bytes()
    full = args if "--reason" in args else [*args, "--reason", "r"]
    assert waive(root, *full) == EXIT_INVALID
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err
    assert record_path(root, SWEEP).read_bytes() == before, "nothing recorded"
    assert main(["waive", "nope-20260101T000000", "--case", GO2, "--reason", "r",
                 "--results", str(root)]) == EXIT_INVALID


def verdict(kind: Verdict, waived: str | None = None) -> GateVerdict:
    comparison = stats.Comparison(2.0, math.nan, math.nan, 0.95, math.nan, 3, 3, False)
    return GateVerdict(0, "throughput", GO2, "cand", "<= 1.5x", comparison, kind, "why", waived=waived)


def test_the_exit_code_rule():
    passed, failed, undecided = Verdict.PASS, Verdict.FAIL, Verdict.INCONCLUSIVE
    assert gates_exit_code([verdict(failed, "ok"), verdict(failed, "ok"), verdict(passed)]) == EXIT_OK
    assert gates_exit_code([verdict(failed, "ok"), verdict(undecided)]) == EXIT_GATE_INCONCLUSIVE
    assert gates_exit_code([verdict(failed, "ok"), verdict(failed), verdict(undecided)]) == EXIT_GATE_FAILED
    assert gates_exit_code([replace(verdict(passed), waived="unused")]) == EXIT_OK


def test_waivers_declared_in_the_yaml(root, capsys):
    record = read_record(root, SWEEP)
    record.spec.waivers = [WaiverSpec(case=GO2, side="cand", gate=0, reason="decided in review")]
    write_record(root, record)
    code, md = report(root, capsys)
    assert code == EXIT_OK and "**FAIL (waived: decided in review)**" in md
    assert "| 2026-01-01T00:00:00+00:00 | sweep YAML | waive |" in md, "dated when the sweep was created"
    revoke = ["--case", GO2, "--side", "cand", "--gate", "0", "--revoke", "--reason", "no"]
    assert waive(root, *revoke) == EXIT_OK
    assert report(root, capsys)[0] == EXIT_GATE_FAILED, "a declared waiver can be revoked too"


def sweep_file(tmp_path, **extra) -> str:
    sweep = {"name": "fake-ab", "sides": {"old": {"ref": "HEAD~1"}, "new": {"ref": "HEAD"}},
             "baseline": "old", "cases": ["sac/fake/none"], "known": {"tasks": [], "sims": []},
             "command": list(COMMAND),
             "params": {"num_envs": 8, "warmup": 1, "measure": 4, "threads": 1}, "repeats": 4,
             "timeout_s": 60, "gates": [{"metric": "throughput", "max_ratio": 1.0}], **extra}
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(sweep))
    return str(path)


@pytest.mark.parametrize("waiver, message", [
    ({"case": "sac/fake/none", "side": "old", "reason": "r"}, "waivers[0]: side 'old' has no gate verdicts"),
    ({"case": "sac/fake/none", "gate": 1, "reason": "r"}, "waivers[0]: gate 1 does not exist"),
    ({"case": "sac/other/none", "reason": "r"}, "waivers[0]: case 'sac/other/none' is not one of"),
    ({"case": "sac/fake/none"}, "waivers[0]"),
    ({"case": "sac/fake/none", "reason": "r", "gate": "first"}, "waivers[0].gate"),
])
def test_bad_yaml_waivers_are_invalid_input(tmp_path, monkeypatch, capsys, waiver, message):
    repo = make_fake_repo(tmp_path)
    monkeypatch.chdir(repo.path)
    assert main(["plan", sweep_file(tmp_path, waivers=[waiver])]) == EXIT_INVALID
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.slow
def test_a_sweep_whose_every_fail_is_waived_in_its_yaml_exits_0(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SHASWEEP_HOME", str(tmp_path / "home"))
    repo = make_fake_repo(tmp_path, work_ms=(40.0, 20.0))  # new is 2x faster: a FAIL of max_ratio 1.0
    monkeypatch.chdir(repo.path)
    waiver = {"case": "sac/fake/none", "side": "new", "gate": 0, "reason": "faster is fine", "by": "qa"}
    assert main(["run", sweep_file(tmp_path, waivers=[waiver]), "--no-progress"]) == EXIT_OK
    out = capsys.readouterr().out
    assert "FAIL (waived: faster is fine)" in out and out.rstrip().endswith("WAIVED 1 — exit 0")
    (md,) = (repo.path / "results" / "reports").glob("*.md")
    assert "**FAIL (waived: faster is fine)**" in md.read_text()


APPENDER = """
import sys
from pathlib import Path
from orchestrator.store.records import append_entry
root, sweep = Path(sys.argv[1]), sys.argv[2]
for i in range(int(sys.argv[3])):
    append_entry(root, sweep, "waivers", {"action": "waive", "case": "c", "reason": f"entry {i}"})
"""
REWRITER = """
import json, sys
from pathlib import Path
from dataclasses import replace
from orchestrator.store.records import read_record, write_record
root, sweep = Path(sys.argv[1]), sys.argv[2]
stale = read_record(root, sweep)  # what a running client holds in memory
for i in range(int(sys.argv[3])):
    write_record(root, replace(stale, status=f"running {i}"))
"""


def test_appends_survive_a_client_rewriting_the_record_concurrently(root):
    n = 40
    procs = [subprocess.Popen([sys.executable, "-c", code, str(root), SWEEP, str(n)])
             for code in (APPENDER, REWRITER)]
    assert [p.wait(timeout=300) for p in procs] == [0, 0]
    record = read_record(root, SWEEP)
    assert [e.reason for e in record.waivers] == [f"entry {i}" for i in range(n)]
    assert record.status == f"running {n - 1}", "the client's own writes still land"
    assert not list((root / "sweeps").glob(".*.tmp")), "no temporary file left behind"


@pytest.mark.slow
def test_a_waiver_recorded_while_the_sweep_runs_survives_its_final_write(tmp_path):
    """`shasweep run` in its own process holds the record in memory and rewrites it at the end; a
    `shasweep waive` in between must still be there, and decide the exit code."""
    repo = make_fake_repo(tmp_path)
    env = {**os.environ, "SHASWEEP_HOME": str(tmp_path / "home")}
    sweep = sweep_file(tmp_path, params={"num_envs": 8, "warmup": 1, "measure": 300, "threads": 1})
    run = subprocess.Popen([sys.executable, "-m", "orchestrator.cli", "run", sweep, "--no-progress"],
                           cwd=repo.path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
    sweeps = repo.path / "results" / "sweeps"

    def dispatching() -> str | None:
        for path in sweeps.glob("fake-ab-*.json"):
            text = path.read_text()
            if text.strip() and json.loads(text).get("scheduler"):
                return path.stem
        return None

    sweep_id = wait_for(dispatching, "the sweep to start dispatching", timeout_s=120)
    waive = [sys.executable, "-m", "orchestrator.cli", "waive", sweep_id, "--case", "sac/fake/none",
             "--side", "new", "--reason", "recorded mid-run", "--by", "qa"]
    assert subprocess.run(waive, cwd=repo.path, env=env, capture_output=True, text=True).returncode == 0
    out, _ = run.communicate(timeout=300)
    assert run.returncode == EXIT_OK, out
    record = read_record(repo.path / "results", sweep_id)
    assert record.status == "finished" and [w.reason for w in record.waivers] == ["recorded mid-run"]
    last_run_ended = pd.read_parquet(repo.path / "results" / "runs")["ended_at"].max()
    assert last_run_ended > pd.Timestamp(record.waivers[0].time), "waived before the sweep ended"
    assert "FAIL (waived: recorded mid-run)" in out
