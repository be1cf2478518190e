"""The three example sweeps (examples/) end to end: real `shasweep run` processes against a generated
repository whose code knows nothing of shasweep, each bench kept outside the repository's history."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from anyrepo_helpers import EXAMPLES, make_demo_repo, shasweep

from orchestrator.render.plots import breakdown_phases
from orchestrator.store.query import read_runs

pytestmark = pytest.mark.slow


@pytest.fixture
def demo(tmp_path):
    repo = tmp_path / "demo-repo"
    return repo, make_demo_repo(repo)


def run_example(name: str, tmp_path, repo, *extra: str):
    results = tmp_path / "results"
    proc = shasweep("run", str(EXAMPLES / name / "sweep.yaml"), f"repo={repo}", f"results={results}", *extra,
                    cwd=tmp_path, home=tmp_path / "home")
    runs = pd.read_parquet(results / "runs")
    steps = pd.read_parquet(results / "steps")
    return proc, results, runs, steps


def assert_imported_from_each_worktree(runs: pd.DataFrame) -> None:
    for run in runs.itertuples():
        modules = json.loads(run.audit_modules)
        assert modules["demolib"].startswith(run.worktree + "/"), modules
    assert runs.groupby("sha")["worktree"].nunique().eq(1).all() and runs["worktree"].nunique() == 2


def test_v1_example_bench_with_the_copied_protocol_writer(tmp_path, demo):
    repo, shas = demo
    proc, results, runs, steps = run_example("v1", tmp_path, repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert len(runs) == 6 and (runs["status"] == "ok").all()
    assert (runs["audit_git_sha"] == runs["sha"]).all() and set(runs["sha"]) == set(shas)
    assert_imported_from_each_worktree(runs)
    measured = steps[~steps["warmup"]]
    assert measured.groupby("run_key")["step"].nunique().eq(20).all()
    report = next((results / "reports").glob("*.md")).read_text()
    assert "count_words_ms" in report and "physics_ms" not in report
    html = next((results / "reports").glob("*.html")).read_text()
    assert "env steps" not in html
    assert_looks_like_itself(results, runs)


def test_json_example_maps_the_document_and_keeps_per_step_samples(tmp_path, demo):
    repo, _ = demo
    proc, results, runs, steps = run_example("json", tmp_path, repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert len(runs) == 6 and (runs["status"] == "ok").all() and (runs["protocol"] == "json").all()
    assert_imported_from_each_worktree(runs)
    assert set(steps["phase"]) == {"count_words_ms"}, "a number (top10_ms) gives no step rows"
    assert steps.groupby("run_key")["step"].nunique().eq(20).all()
    means = steps.groupby("run_key")["ms"].mean()
    assert runs.set_index("run_key")["count_words_ms"].sub(means).abs().max() < 1e-9
    assert runs["top10_ms"].gt(0).all()
    assert runs["distinct_words"].eq(97 + 8).all(), "97 numbers and 8 distinct words"
    assert all(json.loads(v) == {"python": json.loads(v)["python"]} for v in runs["audit_versions"])
    report = next((results / "reports").glob("*.md")).read_text()
    for metric in ("throughput", "count_words_ms", "top10_ms", "distinct_words"):
        assert f"| {metric} " in report, report
    assert "torch" not in report and "mujoco" not in report
    assert "versions: python=" in report, "the host section shows the versions the bench reported"
    assert breakdown_phases(read_runs(results)) == ["count_words_ms", "top10_ms"]
    html = next((results / "reports").glob("*.html")).read_text()
    assert "phase time (ms per step, median of run means)" in html
    assert_looks_like_itself(results, runs)


ENVRUNTIME_WORDS = ("variant", "env class", "backend class", "manager", "vector step")


def assert_looks_like_itself(results: Path, runs: pd.DataFrame) -> None:
    """A foreign bench's results hold only what it reported: no envruntime phase or audit column of
    nulls in its runs files, no variant or env class in its report."""
    envruntime = {"physics_ms", "update_state_ms", "policy_ms", "audit_env_class", "audit_backend_class",
                  "audit_managers", "audit_threads"}
    files = list((results / "runs").rglob("*.parquet"))
    for path in files:
        columns = set(pq.read_schema(path).names)
        assert not columns & envruntime and not any(c.startswith("update_state.") for c in columns), path
    null_columns = [c for c in runs.columns if runs[c].isna().all()]
    assert not [c for c in null_columns if c.endswith("_ms") or c.startswith("audit_")], \
        f"a phase or audit column no run reported: {null_columns}"
    report = next((results / "reports").glob("*.md")).read_text().lower()
    assert not [w for w in ENVRUNTIME_WORDS if w in report], [w for w in ENVRUNTIME_WORDS if w in report]


def test_time_example_times_the_whole_command_and_prepares_each_sha_once(tmp_path, demo):
    repo, shas = demo
    proc, results, runs, steps = run_example("time", tmp_path, repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert len(runs) == 6 and (runs["status"] == "ok").all()
    assert steps.groupby("run_key")["step"].nunique().eq(3).all(), "warm-up runs are not recorded"
    assert set(steps["phase"]) == {"wall_ms", "user_ms", "sys_ms", "cpu_ms"}
    per_run = steps.pivot_table(index=["run_key", "step"], columns="phase", values="ms")
    assert ((per_run["cpu_ms"] - per_run["user_ms"] - per_run["sys_ms"]).abs() < 1e-9).all(), \
        "a measured run's CPU time is its user and system time"
    walls = steps[steps["phase"] == "wall_ms"].groupby("run_key")["ms"]
    by_key = runs.set_index("run_key")
    assert (by_key["wall_ms"] - walls.mean()).abs().max() < 1e-6
    assert ((by_key["throughput"] - 3 / (walls.sum() / 1000)).abs() / by_key["throughput"]).max() < 1e-9
    assert runs["max_rss_mib"].between(1, 4096).all() and runs["user_ms"].gt(0).all()
    assert_imported_from_each_worktree(runs)
    home = tmp_path / "home" / "worktrees"
    assert sorted(p.name.split(".")[0] for p in home.rglob("*.prepared-*")) == sorted(shas)
    assert len(list(home.rglob("*.prepare-*.log"))) == 2
    html = next((results / "reports").glob("*.html")).read_text()
    assert "runs / s" in html and "env steps" not in html
    for phase in ("wall_ms", "user_ms", "sys_ms", "cpu_ms"):  # each its own metric, not parts of wall
        assert f"cli: {phase} per run" in html and f"{phase} (ms per run)" in html
    assert "phase breakdown" not in html and "vector step" not in html
    assert_looks_like_itself(results, runs)


def test_lockstep_example_bench_is_the_bench_helper_in_seven_lines(tmp_path, demo):
    repo, shas = demo
    lines = [line for line in (EXAMPLES / "lockstep" / "bench.py").read_text().splitlines()
             if line.strip() and not line.startswith('"""')]
    assert len(lines) <= 10, "a lockstep-capable bench of your own in at most 10 lines"
    proc, results, runs, steps = run_example("lockstep", tmp_path, repo)
    assert proc.returncode in (0, 4), proc.stdout + proc.stderr
    assert len(runs) == 6 and (runs["status"] == "ok").all() and (runs["ran_in"] == "lockstep").all()
    assert (runs["audit_git_sha"] == runs["sha"]).all() and set(runs["sha"]) == set(shas)
    assert_imported_from_each_worktree(runs)
    measured = steps[~steps["warmup"]]
    assert measured.groupby("run_key")["step"].nunique().eq(4 * 5).all(), "4 blocks of 5 measured steps"
    assert set(steps["phase"]) == {"step_ms", "cpu_ms", "thread_cpu_ms"}, \
        "the word counts a step returns are not phases; the helper times the step's wall and CPU time"
    blocks = [json.loads(b) for b in runs["blocks"]]
    assert all([b["cycle"] for b in mine if not b["warmup"]] == [0, 1, 2, 3] for mine in blocks)
    report = next((results / "reports").glob("*.md")).read_text()
    assert "## Lockstep" in report and "wordcount: 6 runs lockstep" in report
