"""The worker's audit of json and time benches: the throughput cross-check only where a window exists,
and by default the worktree's packages audited where the bench imported them (a shadowing copy beside
the bench fails the run, named). Real benches and a real git repository through ``execute_run``."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pandas as pd
from fakebench.fakerepo import FakeRepo, git, make_run
from omegaconf import OmegaConf

from orchestrator.contract import AUDIT_FAILED
from orchestrator.plan.expand import ResolvedSweep, build_plan
from orchestrator.spec.load import side_settings, spec_from_config
from orchestrator.worker.bench_task import execute_run

# The seeds' final-JSON bench: a throughput, per-step timings, and no measured window.
SEEDS_DOCUMENT = {"collector_active_steps_per_sec": 41000.0, "window_s": 0.5,
                  "phases": {"collector_step_ms": [1.2, 1.1, 1.3]}}
SEEDS_MAPPING = {"throughput": "collector_active_steps_per_sec",
                 "phases": {"collector_step_ms": "phases.collector_step_ms"}}


def json_bench_run(repo, tmp_path, mapping: dict, document: dict = SEEDS_DOCUMENT):
    literal = repr(document).replace("{", "{{").replace("}", "}}")  # braces are placeholders in commands
    code = f"import json, sys; json.dump({literal}, open(sys.argv[1], 'w'))"
    run = make_run(repo, repo.shas[0], results_root=tmp_path / "results",
                   command=("{python}", "-c", code, "{result}"),
                   params={"num_envs": 8, "warmup": 0, "measure": 3})
    return replace(run, protocol="json", json_mapping=mapping, audit_modules=())


def test_a_json_bench_without_a_window_is_not_rejected_for_its_throughput(tmp_path, repo):
    outcome = execute_run(json_bench_run(repo, tmp_path, SEEDS_MAPPING))
    assert outcome.status == "ok", outcome.error
    assert outcome.throughput == 41000.0


def test_a_window_the_mapping_names_is_checked(tmp_path, repo):
    """num_envs 8 x 3 steps / 0.5 s = 48 steps/s: a throughput of 41000 disagrees; 48 agrees."""
    windowed = {**SEEDS_MAPPING, "measure_wall_s": "window_s"}
    outcome = execute_run(json_bench_run(repo, tmp_path, windowed))
    assert outcome.status == AUDIT_FAILED
    assert "summary throughput 41000 disagrees with num_envs 8 x 3 measured steps / measure_wall_s 0.5" \
        in outcome.error
    agreeing = {**SEEDS_DOCUMENT, "collector_active_steps_per_sec": 48.0}
    outcome = execute_run(json_bench_run(repo, tmp_path, windowed, agreeing))
    assert outcome.status == "ok", outcome.error
    assert pd.read_parquet(outcome.runs_file).iloc[0]["measure_wall_s"] == 0.5


def library_repo(root: Path) -> FakeRepo:
    """A repository whose package ``mylib`` says which copy it is; its bench lives beside the sweep
    (outside the worktree), as a user's own bench script does."""
    repo = root / "librepo"
    (repo / "mylib").mkdir(parents=True)
    (repo / "mylib" / "__init__.py").write_text("WHERE = 'the SHA'\n")
    (repo / "tests").mkdir()
    (repo / "tests" / "__init__.py").write_text("")  # a package the bench never imports
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "mylib")
    sha = git(repo, "rev-parse", "HEAD")
    return FakeRepo(path=repo, shas=(sha, sha))


def bench_beside_the_sweep(repo: FakeRepo, tmp_path: Path, shadow: bool, **changes):
    sweep_dir = tmp_path / "sweep"
    sweep_dir.mkdir(exist_ok=True)
    (sweep_dir / "bench.py").write_text("import mylib\nassert mylib.WHERE\n")
    if shadow:  # the script's directory comes first on sys.path: this copy wins over the worktree's
        (sweep_dir / "mylib").mkdir()
        (sweep_dir / "mylib" / "__init__.py").write_text("WHERE = 'a stale copy'\n")
    run = make_run(repo, repo.shas[0], results_root=tmp_path / "results",
                   command=("{python}", "{sweep_dir}/bench.py"), params={})
    return replace(run, protocol="time", params={"measure": 1}, sweep_dir=str(sweep_dir), **changes)


def test_a_shadowing_copy_beside_the_bench_fails_the_audit_by_default(tmp_path, monkeypatch):
    monkeypatch.setenv("SHASWEEP_HOME", str(tmp_path / "home"))
    repo = library_repo(tmp_path)
    outcome = execute_run(bench_beside_the_sweep(repo, tmp_path, shadow=True))
    assert outcome.status == AUDIT_FAILED
    stale = tmp_path / "sweep" / "mylib" / "__init__.py"
    assert f"module mylib was imported from {stale}, outside the SHA's worktree" in outcome.error
    off = execute_run(bench_beside_the_sweep(repo, tmp_path, shadow=False, audit_modules=()))
    assert off.status == "ok", "audit_modules: [] turns the audit off"
    assert "audit_modules" not in pd.read_parquet(off.runs_file).columns, "nothing audited: no column"


def test_the_sha_s_own_package_passes_and_unimported_packages_are_no_claim(tmp_path, monkeypatch):
    monkeypatch.setenv("SHASWEEP_HOME", str(tmp_path / "home"))
    repo = library_repo(tmp_path)
    outcome = execute_run(bench_beside_the_sweep(repo, tmp_path, shadow=False))
    assert outcome.status == "ok", outcome.error
    row = pd.read_parquet(outcome.runs_file).iloc[0]
    modules = json.loads(row["audit_modules"])
    assert set(modules) == {"mylib", "tests"} and modules["tests"] is None
    assert modules["mylib"] == str(Path(row["worktree"]) / "mylib" / "__init__.py")


def test_audit_modules_unset_empty_or_listed_reach_the_worker():
    base = {"name": "m", "sides": {"a": {"ref": "HEAD"}}, "baseline": "a", "cases": ["c"],
            "command": ["{python}", "b.py"], "protocol": "time"}
    for written, planned in ((None, None), ([], ()), (["mylib"], ("mylib",))):
        data = base if written is None else {**base, "audit_modules": written}
        spec = spec_from_config(OmegaConf.create(data), [])
        resolved = ResolvedSweep(spec=spec, repo=Path("/r"), results_root=Path("/r/results"),
                                 shas={"a": "a" * 40}, settings={"a": side_settings(spec, "a")})
        assert build_plan(resolved, "m-1")[0].audit_modules == planned
