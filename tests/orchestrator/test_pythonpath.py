"""``pythonpath``: worktree directories first on the bench's PYTHONPATH, for src-layout repositories.

The generated repository holds its package only under ``src/`` (``src/srcpkg/bench.py``, the fake
bench), at two commits that differ in speed; the bench runs as ``python -m srcpkg.bench``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml
from fakebench.fakerepo import FAKE_BENCH, WORK_MS, FakeRepo, git, make_run

from orchestrator.analysis.legacy_audit import AUDIT_FAILED, apply_audit
from orchestrator.cli.main import main
from orchestrator.errors import EXIT_GATE_FAILED, EXIT_INVALID
from orchestrator.worker.bench_task import execute_run

SRC_COMMAND = ("{python}", "-m", "srcpkg.bench", "--stream", "{stream}", "--warmup", "{warmup}",
               "--measure", "{measure}", "--num-envs", "{num_envs}", "--threads", "{threads}")


def make_src_repo(root: Path) -> FakeRepo:
    """Two commits of ``src/srcpkg/bench.py`` (nothing importable at the top level)."""
    repo = root / "srcrepo"
    package = repo / "src" / "srcpkg"
    package.mkdir(parents=True)
    git(repo, "init", "-q")
    (package / "__init__.py").write_text('"""A package that lives only under src/."""\n')
    shas = []
    for work_ms in WORK_MS:
        source = FAKE_BENCH.read_text().replace("WORK_MS = 4.0", f"WORK_MS = {work_ms}")
        (package / "bench.py").write_text(source)
        git(repo, "add", "src")
        git(repo, "commit", "-q", "-m", f"src-layout bench, WORK_MS={work_ms}")
        shas.append(git(repo, "rev-parse", "HEAD"))
    return FakeRepo(path=repo, shas=(shas[0], shas[1]))


@pytest.fixture
def src_repo(tmp_path, monkeypatch):
    monkeypatch.setenv("SHASWEEP_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("SHASWEEP_LOCK", raising=False)
    monkeypatch.delenv("SHASWEEP_BENCH_CPUS", raising=False)
    return make_src_repo(tmp_path)


def row_of(outcome: dict) -> pd.Series:
    return pd.read_parquet(outcome.runs_file).iloc[0]


def audited(row: pd.Series) -> pd.Series:
    return apply_audit(pd.DataFrame([row]).astype({"error": object})).iloc[0]


def src_run(repo: FakeRepo, tmp_path: Path, pythonpath: tuple[str, ...]):
    run = make_run(repo, repo.shas[1], results_root=tmp_path / "results", command=SRC_COMMAND)
    return run.__class__(**{**run.to_dict(), "pythonpath": pythonpath})


def test_src_first_on_pythonpath_and_the_module_audit_passes(tmp_path, src_repo):
    outcome = execute_run(src_run(src_repo, tmp_path, ("src", ".")))
    assert outcome.status == "ok", outcome.error
    row = row_of(outcome)
    module = Path(row["audit_module_file"])
    tree = module.parents[2]
    assert module.parts[-3:] == ("src", "srcpkg", "bench.py") and tree.parent.parent.name == "worktrees"
    bench_path = row["audit_pythonpath"].split(":")
    assert bench_path[:2] == [str(tree / "src"), str(tree)], "in the order of the sweep's pythonpath"
    assert json.loads(row["pythonpath"]) == [str(tree / "src"), str(tree)]
    assert audited(row)["status"] == "ok"


def test_without_src_the_package_is_not_found(tmp_path, src_repo):
    outcome = execute_run(src_run(src_repo, tmp_path, (".",)))
    assert outcome.status == "failed" and "No module named 'srcpkg'" in outcome.error


def test_a_missing_directory_fails_the_run_naming_it(tmp_path, src_repo):
    outcome = execute_run(src_run(src_repo, tmp_path, ("src", "lib")))
    assert outcome.status == "failed"
    assert "pythonpath directory 'lib' does not exist in the worktree" in outcome.error
    assert row_of(outcome)["error"] == outcome.error, "recorded like any failed run"


def test_code_imported_from_outside_the_pythonpath_fails_the_audit(tmp_path, src_repo, monkeypatch):
    """The main checkout's src/ on the inherited PYTHONPATH (as an editable install would be): the bench
    loads that copy, whose git SHA is the right one, so only the module check catches it."""
    monkeypatch.setenv("PYTHONPATH", str(src_repo.path / "src"))
    outcome = execute_run(src_run(src_repo, tmp_path, (".",)))
    assert outcome.status == AUDIT_FAILED, "the worker audits the run when it ends"
    row = row_of(outcome)
    assert row["audit_git_sha"] == src_repo.shas[1]
    assert row["audit_module_file"] == str(src_repo.path / "src" / "srcpkg" / "bench.py")
    loaded = f"{src_repo.path}/src/srcpkg/bench.py"
    assert f"loaded module {loaded} is in none of the pythonpath" in outcome.error
    assert audited(row)["status"] == AUDIT_FAILED, "and a report-time audit of the row agrees"


def sweep_yaml(tmp_path: Path, **extra) -> Path:
    sweep = {
        "name": "src-ab", "sides": {"old": {"ref": "HEAD~1"}, "new": {"ref": "HEAD"}}, "baseline": "old",
        "cases": ["sac/fake/none"], "known": {"tasks": [], "sims": []}, "command": list(SRC_COMMAND),
        "params": {"num_envs": 8, "warmup": 1, "measure": 4, "threads": 1}, "repeats": 4, "timeout_s": 60,
        "gates": [{"metric": "physics_ms", "max_ratio": 0.6}, {"metric": "throughput", "max_ratio": 1.0}],
        **extra,
    }
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(sweep))
    return path


@pytest.mark.slow
def test_a_src_layout_sweep_end_to_end(tmp_path, src_repo, monkeypatch, capsys):
    monkeypatch.chdir(src_repo.path)
    assert main(["run", str(sweep_yaml(tmp_path, pythonpath=["src"])), "--no-progress"]) == EXIT_GATE_FAILED
    capsys.readouterr()
    (md,) = (src_repo.path / "results" / "reports").glob("src-ab-*.md")
    assert "<= 0.6x | 0.500 | **PASS**" in md.read_text(), "the faster second commit was measured from src/"
    runs = pd.read_parquet(src_repo.path / "results" / "runs")
    assert (runs["status"] == "ok").all() and len(runs) == 8
    assert runs["audit_module_file"].str.endswith("/src/srcpkg/bench.py").all()
    (record,) = (src_repo.path / "results" / "sweeps").glob("src-ab-*.json")
    assert json.loads(record.read_text())["spec"]["pythonpath"] == ["src"]


def test_plan_shows_the_pythonpath(tmp_path, src_repo, monkeypatch, capsys):
    monkeypatch.chdir(src_repo.path)
    assert main(["plan", str(sweep_yaml(tmp_path, pythonpath=["src", "."]))]) == 0
    assert "pythonpath (first on the bench's PYTHONPATH): src, ." in capsys.readouterr().out


@pytest.mark.parametrize("pythonpath, message", [
    (["lib"], "pythonpath[0]: directory 'lib' does not exist in commit"),
    (["src", "/abs"], "pythonpath[1]: '/abs' must be a directory relative to the worktree"),
    (["../up"], "pythonpath[0]: '../up' must be a directory relative to the worktree"),
    (["src", "src/"], "pythonpath: directories must not repeat"),
    ([], "pythonpath: at least one directory is required"),
])
def test_bad_pythonpath_is_invalid_input_before_dispatch(tmp_path, src_repo, monkeypatch, capsys,
                                                         pythonpath, message):
    monkeypatch.chdir(src_repo.path)
    assert main(["plan", str(sweep_yaml(tmp_path, pythonpath=pythonpath))]) == EXIT_INVALID
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err
