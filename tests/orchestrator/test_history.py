"""shasweep history: every recorded run of one case over time, from the Parquet results alone."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import pandas as pd
import pytest
from test_results import outcome, planned

from orchestrator.analysis.history_model import HistoryQuery, load_case_history
from orchestrator.analysis.legacy_audit import AUDIT_FAILED
from orchestrator.cli.main import main
from orchestrator.errors import EXIT_INVALID, EXIT_OK
from orchestrator.store.parquet import write_run

CASE = "sac/g1_walk_flat/mujoco"  # the case of test_results.planned
SHA_B = "b" * 40


def history_runs(root, **query) -> pd.DataFrame:
    """The runs of ``CASE`` that ``shasweep history`` shows, filtered by ``query``."""
    return load_case_history(root, HistoryQuery(case=CASE, **query)).runs


@pytest.fixture
def root(tmp_path):
    """Day 0..3: base and cand runs in two sweeps (written out of order); one cand run loaded base's code."""
    for day, sweep, side, throughput in [(2, "s2", "base", 110.0), (0, "s1", "base", 100.0),
                                         (1, "s1", "cand", 150.0), (3, "s2", "cand", 160.0)]:
        run = dataclasses.replace(planned(tmp_path, f"{sweep}-{side}", sweep), side=side,
                                  sha=SHA_B if side == "cand" else "a" * 40)
        result = outcome(throughput=throughput)
        loaded = SHA_B if day == 1 else result.header["audit"]["git_sha"]  # day 3 loaded the wrong SHA
        write_run(run, dataclasses.replace(
            result, started_at=result.started_at + timedelta(days=day),
            header={"audit": {**result.header["audit"], "git_sha": loaded}}))
    other = dataclasses.replace(planned(tmp_path, "go2", "s1"), case="sac/go2_joystick_flat/mujoco")
    write_run(other, outcome())
    return tmp_path / "results"


def test_runs_of_the_case_oldest_first_and_audited(root):
    history = history_runs(root)
    assert history["throughput"].tolist() == [100.0, 150.0, 110.0, 160.0]
    assert history["status"].tolist() == ["ok", "ok", "ok", AUDIT_FAILED]
    assert "loaded SHA" in history["error"].iloc[3]


def test_side_and_sha_filters(root):
    assert history_runs(root, side="base")["throughput"].tolist() == [100.0, 110.0]
    assert history_runs(root, sha="bbbb")["side"].unique().tolist() == ["cand"]


def test_cli_markdown_and_html(root, capsys):
    out = root / "h.html"
    argv = ["history", "--case", CASE, "--side", "cand", "--results", str(root)]
    assert main([*argv, "--format", "html", "--out", str(out)]) == EXIT_OK
    printed = capsys.readouterr().out
    assert "2 runs of sac/g1_walk_flat/mujoco, side cand (1 ok) in 2 sweeps" in printed
    assert "| 2026-01-02 00:00:00 | s1 | cand | bbbbbbbbbbbb | manager | P1 | ok | 150 |" in printed
    assert "- P1: params {" in printed and "; command [" in printed
    page = out.read_text(encoding="utf-8")
    assert page.count("data-root-id=") == 1 and '<td class="fail">audit_failed</td>' in page


def test_each_distinct_params_is_its_own_series_and_median(root, capsys):
    """Runs with another params.num_envs are never mixed under one median or one line."""
    for day, throughput in [(4, 400.0), (5, 420.0)]:
        run = planned(root.parent, f"s3-{day}", "s3")
        run = dataclasses.replace(run, params={**run.params, "num_envs": 4096})
        result = outcome(throughput=throughput)
        write_run(run, dataclasses.replace(result, started_at=result.started_at + timedelta(days=day),
                                           steps=result.steps))
    history = history_runs(root, side="base")
    assert history["settings"].tolist() == ["P1", "P1", "P2", "P2"]
    assert main(["history", "--case", CASE, "--side", "base", "--metric", "throughput", "--format", "html",
                 "--results", str(root)]) == EXIT_OK
    printed = capsys.readouterr().out
    assert "median throughput of ok runs: P1 105, P2 410" in printed
    assert '"num_envs": 4096' in printed.split("- P2: ")[1].splitlines()[0]
    page = (root / "reports" / f"history-{CASE.replace('/', '_')}-throughput.html").read_text()
    assert page.count("data-root-id=") == 1


@pytest.mark.parametrize("extra, message", [
    (["--case", "sac/nope/mujoco"], "--case: no runs of case 'sac/nope/mujoco'; recorded cases: sac/g1"),
    (["--case", CASE, "--side", "x"], "--side: no runs of side 'x' in case sac/g1_walk_flat/mujoco; sides"),
    (["--case", CASE, "--sha", "cccc"], "--sha: no runs of sac/g1_walk_flat/mujoco, sha cccc*"),
    (["--case", CASE, "--sha", "HEAD"], "--sha: 'HEAD' is not a SHA prefix"),
    (["--case", CASE, "--metric", "warp_ms"], "--metric: unknown metric 'warp_ms'; recorded: "),
])
def test_what_matches_nothing_is_invalid_input(root, capsys, extra, message):
    assert main(["history", *extra, "--results", str(root)]) == EXIT_INVALID
    assert message in capsys.readouterr().err


def test_an_empty_results_root_is_invalid_input(tmp_path, capsys):
    assert main(["history", "--case", CASE, "--results", str(tmp_path)]) == EXIT_INVALID
    assert "no runs recorded under" in capsys.readouterr().err


def test_last_shows_only_the_latest_sweeps_of_the_case_and_says_so(root, capsys):
    """``--last N`` reads the case's N latest sweeps (by their first run), ``--all`` every one; the
    summary line names the window."""
    assert history_runs(root, last=1)["sweep_id"].unique().tolist() == ["s2"]
    assert history_runs(root, last=2)["sweep_id"].unique().tolist() == ["s1", "s2"]
    argv = ["history", "--case", CASE, "--results", str(root)]
    assert main([*argv, "--last", "1"]) == EXIT_OK
    assert ("2 runs of sac/g1_walk_flat/mujoco (1 ok) in 1 sweeps (the latest 1 of 2 sweeps of the case; "
            "--all shows every one)") in capsys.readouterr().out
    assert main([*argv, "--all"]) == EXIT_OK
    assert "4 runs of sac/g1_walk_flat/mujoco (3 ok) in 2 sweeps; median" in capsys.readouterr().out
    assert main([*argv, "--last", "0"]) == EXIT_INVALID
    assert "--last" in capsys.readouterr().err


def test_the_cli_window_is_what_the_change_point_search_looks_at():
    """The CLI keeps its own literal (parsing arguments imports no numpy); it must not drift."""
    from orchestrator.analysis.changepoints import MAX_SWEEPS
    from orchestrator.cli.results import HISTORY_SWEEPS

    assert HISTORY_SWEEPS == MAX_SWEEPS
