"""The protocol readers on the worker (json document, time) and the module audit, with real bench
processes through ``execute_run`` (no Dask) and on hand-made inputs."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest
from fakebench.fakerepo import make_run

from orchestrator.worker.bench_task import execute_run
from orchestrator.worker.module_audit import module_reasons, read_modules
from orchestrator.worker.protocols.json_doc import JsonPathError, map_document, number_at

DOC = {"results": [{"fps": 120.5, "phase": {"step_ms": {"mean_ms": 2.0, "samples_ms": [1.0, 2.0, 3.0]}},
                    "name": "fast"}]}


def test_a_list_gives_step_rows_and_its_mean_a_number_gives_the_mean():
    summary, steps = map_document(DOC, {"throughput": "results.0.fps",
                                        "phases": {"step_ms": "results.0.phase.step_ms.samples_ms",
                                                   "mean_ms": "results.0.phase.step_ms.mean_ms"}})
    assert summary["throughput"] == 120.5
    assert summary["phase_means_ms"] == {"step_ms": 2.0, "mean_ms": 2.0}
    assert [(s.step, s.warmup, s.phases) for s in steps] == [
        (0, False, {"step_ms": 1.0}), (1, False, {"step_ms": 2.0}), (2, False, {"step_ms": 3.0})]


@pytest.mark.parametrize(("path", "words"), [
    ("results.1.fps", "needs a list index < 1 at 'results', got '1'"),
    ("results.0.speed", "has no 'speed' at 'results.0' (there: an object with keys fps, phase, name)"),
    ("results.0.name", "is str \"fast\", not a number"),
    ("results.0.fps.x", "reaches float 120.5 at 'results.0.fps'"),
    ("results.0.phase", "is an object with keys step_ms, not a number"),
])
def test_a_bad_path_names_the_key_the_path_and_what_was_there(path, words):
    with pytest.raises(JsonPathError) as info:
        number_at(DOC, path, "json.throughput")
    assert str(info.value).startswith(f"json.throughput: {path!r}") and words in str(info.value)


def test_not_a_number_is_refused():
    for value in (True, None, float("nan"), [], [1, "2"]):
        with pytest.raises(JsonPathError):
            number_at({"x": value}, "x", "json.throughput")


def python_run(repo, tmp_path, code: str, **changes):
    run = make_run(repo, repo.shas[0], results_root=tmp_path / "results",
                   command=("{python}", "-c", code), params={})
    return replace(run, **changes)


def test_a_json_bench_that_hangs_times_out_and_keeps_nothing(tmp_path, repo):
    run = python_run(repo, tmp_path, "import time; time.sleep(60)", protocol="json", timeout_s=1.0,
                     json_mapping={"throughput": "fps"})
    outcome = execute_run(run)
    assert outcome.status == "timeout" and outcome.throughput is None


def test_time_protocol_times_each_run_and_stops_at_the_timeout(tmp_path, repo):
    ok = python_run(repo, tmp_path, "sum(range(200000))", protocol="time",
                    params={"warmup": 2, "measure": 4})
    outcome = execute_run(ok)
    assert outcome.status == "ok", outcome.error
    steps = pd.read_parquet(outcome.steps_file)
    assert sorted(steps["step"].unique()) == [0, 1, 2, 3] and not steps["warmup"].any()
    row = pd.read_parquet(outcome.runs_file).iloc[0]
    assert row["protocol"] == "time" and row["steps"] == 4 and row["max_rss_mib"] > 1
    hang = python_run(repo, tmp_path, "import time; time.sleep(60)", protocol="time", timeout_s=1.0,
                      params={"measure": 3})
    assert execute_run(hang).status == "timeout"


def test_time_protocol_stops_at_the_first_failing_run(tmp_path, repo):
    run = python_run(repo, tmp_path, "import sys; print('boom', file=sys.stderr); sys.exit(3)",
                     protocol="time", params={"measure": 5})
    outcome = execute_run(run)
    assert outcome.status == "failed" and "exited with code 3" in outcome.error
    assert "boom" in outcome.error and len(pd.read_parquet(outcome.steps_file)) == 0


def test_the_sitecustomize_records_every_python_process_and_chains(tmp_path):
    site, shadowed, side = tmp_path / "audit", tmp_path / "shadowed", tmp_path / "side.jsonl"
    from orchestrator.worker import module_audit

    env: dict[str, str] = {"PYTHONPATH": str(shadowed)}
    shadowed.mkdir()
    (shadowed / "sitecustomize.py").write_text("import os\nos.environ['CHAINED'] = '1'\n")
    side = module_audit.install(site, ("json", "csv", "never_imported"), env)
    code = ("import json, os, subprocess, sys; assert os.environ.get('CHAINED') == '1';"
            "subprocess.run([sys.executable, '-c', 'import csv'], check=True)")
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
    modules = read_modules(side, ("json", "csv", "never_imported"))
    assert modules["json"].endswith("json/__init__.py") and modules["csv"].endswith("csv.py")
    assert modules["never_imported"] is None


def test_module_reasons():
    row = {"worktree": "/w/abc", "audit_modules": json.dumps(
        {"lib": "/w/abc/lib/__init__.py", "other": "/site/other.py", "gone": None,
         "both": ["/w/abc/both.py", "/w/abcd/both.py"]})}
    reasons = module_reasons(row, ["lib", "other", "gone", "both"])
    assert reasons == ["module other was imported from /site/other.py, outside the SHA's worktree /w/abc",
                       "module gone was never imported by the bench",
                       "module both was imported from /w/abcd/both.py, outside the SHA's worktree /w/abc"]
    assert module_reasons({}, []) == []
    assert module_reasons({"worktree": "/w"}, ["lib"]) == [
        "audit_modules: where the bench imported its modules from was not recorded"]


def test_install_keeps_the_orchestrator_free_of_the_workload(tmp_path):
    """`pip install shasweep` pulls no torch, MuJoCo, MotrixSim or Numba, and the orchestrator imports
    without them; the envruntime extra (which dev and mjwarp include) brings them."""
    import tomllib

    root = Path(__file__).resolve().parents[2]
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    workload = {"torch", "mujoco", "motrixsim", "numba"}
    names = {d.split(">")[0].split("=")[0].split("[")[0] for d in project["dependencies"]}
    assert not names & workload
    extras = project["optional-dependencies"]
    assert {d.split(">")[0].split("=")[0] for d in extras["envruntime"]} >= workload
    assert "shasweep[envruntime]" in extras["dev"] and "shasweep[envruntime]" in extras["mjwarp"]
    blocker = ("import sys, importlib, pkgutil\n"
               "class Block:\n"
               "    def find_spec(self, name, path=None, target=None):\n"
               f"        if name.split('.')[0] in {sorted(workload)!r}:\n"
               "            raise ImportError('blocked ' + name)\n"
               "sys.meta_path.insert(0, Block())\n"
               "import orchestrator\n"
               "for m in pkgutil.walk_packages(orchestrator.__path__, 'orchestrator.'):\n"
               "    if not m.name.endswith('__main__'):\n"
               "        importlib.import_module(m.name)\n")
    subprocess.run([sys.executable, "-c", blocker], check=True, cwd=root)


def test_a_v1_bench_without_kinds_is_told_what_is_missing(tmp_path, repo):
    code = ("import json, sys; f = open(sys.argv[1], 'w');"
            "[f.write(json.dumps({{'step': i, 'phases': {{'x_ms': 1.0}}}}) + '\\n') for i in range(3)]")
    run = make_run(repo, repo.shas[0], results_root=tmp_path / "results",
                   command=("{python}", "-c", code, "{stream}"), params={})  # {{ }}: literal braces
    outcome = execute_run(run)
    assert outcome.status == "failed"
    assert "without a header record" in outcome.error and '3 of its records had no known "kind"' in \
        outcome.error
