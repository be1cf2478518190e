"""What goes wrong when benchmarking another repository, end to end with real processes: a JSON path
that is not there, a module imported from outside the SHA's worktree, prepare per SHA (cached, re-run
for a new SHA, failing)."""

from __future__ import annotations

import shutil

import pandas as pd
import pytest
import yaml
from anyrepo_helpers import EXAMPLES, git, make_demo_repo, shasweep, write_sweep

pytestmark = pytest.mark.slow


@pytest.fixture
def demo(tmp_path):
    repo = tmp_path / "demo-repo"
    make_demo_repo(repo)
    sweeps = tmp_path / "sweeps"
    shutil.copytree(EXAMPLES / "json", sweeps)  # the bench beside the sweep, outside the repo
    return repo, sweeps


def run(tmp_path, sweep, repo, *extra):
    results = tmp_path / "results"
    proc = shasweep("run", str(sweep), f"repo={repo}", f"results={results}", "repeats=1", *extra,
                    cwd=tmp_path, home=tmp_path / "home")
    return proc, results


def test_a_json_path_that_is_not_there_fails_the_run_naming_it_and_keeps_no_number(tmp_path, demo):
    repo, sweeps = demo
    json_block = {"throughput": "results.0.words_per_s",
                  "phases": {"count_words_ms": "results.0.phase_ms.count_ms.samples_ms"}}
    sweep = write_sweep(sweeps / "bad_path.yaml", sweeps / "sweep.yaml", json=json_block)
    proc, results = run(tmp_path, sweep, repo, "continue_on_error=true")
    assert proc.returncode == 3, proc.stdout + proc.stderr
    runs = pd.read_parquet(results / "runs")
    assert (runs["status"] == "failed").all() and len(runs) == 2
    error = runs["error"].iloc[0]
    assert "json.phases.count_words_ms" in error and "'count_ms'" in error, error
    assert "count_words_ms, top10_ms" in error, "it says what was there"
    assert runs["throughput"].isna().all() and "count_words_ms" not in runs and "top10_ms" not in runs
    assert len(pd.read_parquet(results / "steps")) == 0
    (report,) = (results / "reports").glob("*.md")
    assert "json.phases.count_words_ms" in report.read_text(), "the report names the path"


STALE_WRAPPER = """# A bench whose plugin loader puts an installed copy of the library first: the mistake
# the audit catches (the worktree is first on PYTHONPATH, so only code like this can shadow it).
import os, runpy, sys
sys.path.insert(0, os.environ["STALE_SITE"])
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def test_a_module_imported_from_outside_the_worktree_fails_the_audit(tmp_path, demo):
    repo, sweeps = demo
    stale = tmp_path / "site"  # an installed copy of the library, put first by the bench itself
    shutil.copytree(repo / "demolib", stale / "demolib")
    (sweeps / "stale_wrapper.py").write_text(STALE_WRAPPER)
    base = yaml.safe_load((sweeps / "sweep.yaml").read_text())
    command = [base["command"][0], "{sweep_dir}/stale_wrapper.py", *base["command"][1:]]
    sweep = write_sweep(sweeps / "stale.yaml", sweeps / "sweep.yaml", command=command,
                        env={"STALE_SITE": str(stale)})
    proc, results = run(tmp_path, sweep, repo, "continue_on_error=true")
    assert proc.returncode == 3, proc.stdout + proc.stderr
    runs = pd.read_parquet(results / "runs")
    assert (runs["status"] == "audit_failed").all(), "the bench ran fine; the worker's audit failed it"
    assert runs["error"].str.contains("outside the SHA's worktree").all()
    assert runs["audit_modules"].str.contains(str(stale / "demolib")).all()
    report = next((results / "reports").glob("*.md")).read_text()
    assert report.count("audit_failed") >= 2 and "outside the SHA's worktree" in report


def test_prepare_runs_once_per_sha_is_cached_across_sweeps_and_reruns_for_a_new_sha(tmp_path, demo):
    repo, sweeps = demo
    log = tmp_path / "prepared.txt"
    prepare = [["{python}", "-c", "import os, sys; open(sys.argv[1], 'a').write(os.getcwd() + '\\n')",
                str(log)]]
    sweep = write_sweep(sweeps / "prep.yaml", sweeps / "sweep.yaml", prepare=prepare)
    for _ in range(2):
        proc, _ = run(tmp_path, sweep, repo, "repeats=2")
        assert proc.returncode == 0, proc.stdout + proc.stderr
    first = log.read_text().splitlines()
    assert len(first) == 2 and len(set(first)) == 2, "each SHA prepared once, in its own worktree"
    (repo / "NEWS").write_text("a new commit\n")
    git(repo, "add", "NEWS")
    git(repo, "commit", "-q", "-m", "news")
    proc, _ = run(tmp_path, sweep, repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = log.read_text().splitlines()
    assert len(lines) == 3 and lines[:2] == first, "only the new SHA was prepared"


def test_a_failing_prepare_fails_that_shas_runs_with_its_log_and_caches_nothing(tmp_path, demo):
    repo, sweeps = demo
    prepare = [["{python}", "-c", "import sys; print('toolchain missing'); sys.exit(5)"]]
    sweep = write_sweep(sweeps / "prep.yaml", sweeps / "sweep.yaml", prepare=prepare)
    for _ in range(2):  # the second sweep prepares again: nothing was cached
        proc, results = run(tmp_path, sweep, repo, "continue_on_error=true")
        assert proc.returncode == 3, proc.stdout + proc.stderr
    runs = pd.read_parquet(results / "runs")
    assert len(runs) == 4 and (runs["status"] == "failed").all()
    assert runs["error"].str.contains("exited with code 5").all()
    assert runs["error"].str.contains("toolchain missing").all(), "the log tail is in the error"
    home = tmp_path / "home" / "worktrees"
    assert not list(home.rglob("*.prepared-*")) and len(list(home.rglob("*.prepare-*.log"))) == 2


def test_resume_finds_the_bench_through_the_recorded_sweep_dir(tmp_path, demo):
    repo, sweeps = demo
    proc, results = run(tmp_path, sweeps / "sweep.yaml", repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    first = pd.read_parquet(results / "runs")
    lost = next((results / "runs").rglob("*.parquet"))  # the sweep's compacted runs file: both runs
    lost.unlink()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    again = shasweep("run", "--resume", "latest", "--results", str(results), cwd=elsewhere,
                     home=tmp_path / "home")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "resuming 2 of 2 runs" in again.stdout
    runs = pd.read_parquet(results / "runs")
    assert sorted(runs["run_key"]) == sorted(first["run_key"]) and (runs["status"] == "ok").all()
