"""The shasweep CLI: help and usage errors, gc, and one end-to-end `shasweep run` of the fake bench."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml
from fakebench.fakerepo import COMMAND, make_fake_repo

from orchestrator.cli.main import COMMANDS, main
from orchestrator.errors import EXIT_GATE_FAILED, EXIT_INVALID


def test_help_lists_commands_and_exit_codes(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in COMMANDS)
    assert "1  all runs ok, at least one gate failed" in out and "3  a run failed" in out


def test_each_subcommand_help_shows_only_its_exit_codes(capsys):
    for name in ("run", "report"):
        assert main([name, "--help"]) == 0
        assert "1  all runs ok, at least one gate failed" in capsys.readouterr().out
    for name in ("gc", "list", "status", "history", "compare"):
        assert main([name, "--help"]) == 0
        out = capsys.readouterr().out
        assert "gate" not in out and "2  invalid input" in out, name
    assert main(["history", "--help"]) == 0
    assert "--case CASE the case" in " ".join(capsys.readouterr().out.split())


def test_version(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("shasweep ")


@pytest.mark.parametrize("argv", [[], ["frobnicate"], ["run"], ["report"], ["gc", "--max-age-s", "soon"]])
def test_usage_errors_exit_2(argv, capsys):
    assert main(argv) == EXIT_INVALID
    assert "usage: shasweep" in capsys.readouterr().err


def test_overrides_may_follow_options(capsys):
    """`run x.yaml --no-progress repeats=-1`: the late override is read (and rejected before dispatch)."""
    smoke = str(Path(__file__).resolve().parents[2] / "sweeps" / "smoke.yaml")
    assert main(["run", smoke, "--no-progress", "repeats=-1"]) == EXIT_INVALID
    assert "repeats" in capsys.readouterr().err
    assert main(["run", smoke, "--no-progress", "--frobnicate"]) == EXIT_INVALID
    assert "unrecognized arguments: --frobnicate" in capsys.readouterr().err


def test_gc_on_an_empty_home(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SHASWEEP_HOME", str(tmp_path))
    assert main(["gc"]) == 0
    assert "0 worktree(s) removed" in capsys.readouterr().out


@pytest.mark.slow
def test_run_end_to_end_reports_the_difference_between_two_commits(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SHASWEEP_HOME", str(tmp_path / "home"))  # inherited by the bench worker
    repo = make_fake_repo(tmp_path)
    monkeypatch.chdir(repo.path)
    sweep = {
        "name": "fake-ab", "sides": {"old": {"ref": "HEAD~1"}, "new": {"ref": "HEAD"}}, "baseline": "old",
        "cases": ["sac/fake/none"], "known": {"tasks": [], "sims": []}, "command": list(COMMAND),
        "params": {"num_envs": 8, "warmup": 1, "measure": 6, "threads": 1}, "repeats": 5, "timeout_s": 60,
        "gates": [{"metric": "physics_ms", "max_ratio": 0.6}, {"metric": "throughput", "max_ratio": 1.0}],
    }
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(sweep))

    # the new commit is faster; 5 rounds, so wall-clock noise of a loaded machine cannot hide a 2x change
    assert main(["run", str(path), "--no-progress"]) == EXIT_GATE_FAILED
    out = capsys.readouterr().out
    results = repo.path / "results"
    (record_path,) = (results / "sweeps").glob("fake-ab-*.json")
    record = json.loads(record_path.read_text())
    sweep_id = record["sweep_id"]
    assert record["status"] == "finished" and record["host"]["cpu_logical"] >= 1
    assert {s: v["sha"] for s, v in record["sides"].items()} == {"old": repo.shas[0], "new": repo.shas[1]}
    assert [o["status"] for o in record["outcomes"]] == ["ok"] * 10

    csv = pd.read_csv(results / "reports" / f"{sweep_id}.csv").set_index(["side", "metric"])
    assert csv.loc[("new", "physics_ms"), "ratio"] == pytest.approx(0.5), "fake bench: 2 ms vs 4 ms steps"
    assert csv.loc[("new", "throughput"), "ratio"] > 1.3
    assert csv.loc[("new", "throughput"), "sha"] == repo.shas[1]
    assert (csv["n_ok"] == 5).all()
    md = (results / "reports" / f"{sweep_id}.md").read_text()
    assert f"| old | HEAD\\~1 | {repo.shas[0]} |" in md and f"| new | HEAD | {repo.shas[1]} |" in md
    assert "<= 0.6x | 0.500 | **PASS**" in md and "<= 1x" in md and "**FAIL**" in md
    assert repo.shas[0][:10] in out and repo.shas[0] not in out, "the terminal shows short SHAs"
    assert out.rstrip().splitlines()[-1] == "PASS 1 / FAIL 1 / INCONCLUSIVE 0 — exit 1"
    verdicts = json.loads((results / "reports" / f"{sweep_id}.verdicts.json").read_text())
    assert verdicts["exit_code"] == EXIT_GATE_FAILED and verdicts["counts"]["FAIL"] == 1
    assert [(v["metric"], v["verdict"], v["n_candidate"]) for v in verdicts["verdicts"]] == [
        ("physics_ms", "PASS", 5), ("throughput", "FAIL", 5)]
    assert all(v["low"] <= v["high"] and v["waived"] is False for v in verdicts["verdicts"])

    assert main(["report", "latest"]) == EXIT_GATE_FAILED
    out = capsys.readouterr().out
    assert f"shasweep report: {sweep_id}" in out
    assert out.rstrip().splitlines()[-1] == "PASS 1 / FAIL 1 / INCONCLUSIVE 0 — exit 1"

    assert main(["list"]) == 0
    (listed,) = capsys.readouterr().out.splitlines()
    assert listed.startswith(sweep_id) and " finished " in listed and "runs ok 10/10 " in listed
    assert listed.endswith("PASS 1 / FAIL 1 / INCONCLUSIVE 0 — exit 1")
