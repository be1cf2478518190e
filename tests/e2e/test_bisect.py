"""``shasweep bisect`` end to end on generated linear histories: real git, real embedded Dask cluster,
real Parquet. Each commit's bench speed is a file of the commit (``fakebench/step_bench.py``);
runs are tiny, and the measured values follow the commit's model, not the loaded machine's clock."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "orchestrator"))
from fakebench.linear_repo import (  # noqa: E402
    COMMAND,
    CommitModel,
    LinearRepo,
    bisect_sweep,
    make_linear_repo,
    step_models,
)
from fakebench.waits import wait_for  # noqa: E402

from orchestrator.cli.main import main  # noqa: E402
from orchestrator.errors import EXIT_GATE_INCONCLUSIVE, EXIT_INVALID, EXIT_OK, EXIT_RUN_FAILED  # noqa: E402
from orchestrator.store.query import read_runs  # noqa: E402

pytestmark = pytest.mark.slow


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("SHASWEEP_HOME", str(tmp_path / "home"))  # inherited by the bench worker


def setup(tmp_path: Path, models: list[CommitModel], monkeypatch, **spec: object) -> tuple[LinearRepo, Path]:
    repo = make_linear_repo(tmp_path, models)
    path = tmp_path / "bisect.yaml"
    path.write_text(yaml.safe_dump(bisect_sweep(repo, **spec)))
    monkeypatch.chdir(repo.path)
    return repo, path


def bisect(path: Path, repo: LinearRepo, *extra: str) -> int:
    return main(["bisect", str(path), "--good", repo.shas[0], "--bad", "HEAD", "--no-progress", *extra])


def the_record(repo: LinearRepo) -> dict:
    (path,) = (repo.path / "results" / "bisect").glob("*.json")
    return json.loads(path.read_text())


def benchmarked_shas(repo: LinearRepo) -> set[str]:
    return set(pd.read_parquet(repo.path / "results" / "runs", columns=["sha"])["sha"])


@pytest.mark.parametrize(("n", "step_at"), [(16, 11), (64, 37)])
def test_finds_the_step_within_log2_plus_two_shas(tmp_path, monkeypatch, capsys, home, n, step_at):
    repo, path = setup(tmp_path, step_models(n, step_at), monkeypatch)
    assert bisect(path, repo) == EXIT_OK
    out = capsys.readouterr().out
    lines = out.strip().splitlines()
    assert f"first bad commit: {repo.shas[step_at]}" in lines
    assert lines[lines.index(f"first bad commit: {repo.shas[step_at]}") + 1].strip() == repo.subjects[step_at]
    assert "FOUND" in lines[-1] and repo.shas[step_at][:12] in lines[-1], "the last line is the outcome"

    record = the_record(repo)
    assert (record["good"], record["bad"], record["first_bad"]) == (repo.shas[0], repo.shas[-1],
                                                                    repo.shas[step_at])
    assert record["status"] == "found" and record["steps"][0]["role"] == "preflight"
    assert all(s["sha"] in repo.shas and s["mark"] in ("good", "bad") for s in record["steps"])
    shas = benchmarked_shas(repo)
    assert len(shas) <= math.ceil(math.log2(n)) + 2
    runs = read_runs(repo.path / "results", columns=["sha", "repeat", "reused_from"])  # every file's columns
    good = runs[runs["sha"] == repo.shas[0]]
    measured = good[good["reused_from"].isna()]
    assert not measured["repeat"].duplicated().any(), "the good commit is measured once per round"
    assert len(good) == len(measured) * len(record["steps"]), "every step reuses the good rounds"
    assert all("reused" in s["runs"] for s in record["steps"][1:])
    assert {s["sha"] for s in record["steps"]} | {repo.shas[0]} == shas
    for step in record["steps"]:  # every step is an ordinary sweep: record and report exist
        sweep = json.loads((repo.path / "results" / "sweeps" / f"{step['sweep_id']}.json").read_text())
        assert sweep["status"] == "finished"
        assert {label: side["sha"] for label, side in sweep["sides"].items()} == {"good": repo.shas[0],
                                                                                 "cand": step["sha"]}
    html = repo.path / "results" / "reports" / f"bisect-{record['bisect_id']}.html"
    assert "candidate / good ratio" in html.read_text()


def test_remeasure_good_measures_good_in_every_step(tmp_path, monkeypatch, capsys, home):
    repo, path = setup(tmp_path, step_models(8, 5), monkeypatch)
    assert bisect(path, repo, "--remeasure-good") == EXIT_OK
    assert f"first bad commit: {repo.shas[5]}" in capsys.readouterr().out
    record = the_record(repo)
    assert record["remeasure_good"] is True
    runs = read_runs(repo.path / "results", columns=["sha", "reused_from"])
    assert runs["reused_from"].isna().all(), "no copy: no file has the column"
    assert (runs["sha"] == repo.shas[0]).sum() == 3 * len(record["steps"]), "3 good rounds in every step"
    assert main(["bisect", "--resume", record["bisect_id"], "--remeasure-good"]) == EXIT_INVALID
    assert "--remeasure-good" in capsys.readouterr().err


def test_a_bench_beside_the_sweep_file_is_found_through_sweep_dir(tmp_path, monkeypatch, capsys, home):
    """``{sweep_dir}`` is the sweep file's directory in every step, as in ``run`` (it was the repo's)."""
    repo = make_linear_repo(tmp_path, step_models(8, 5))
    beside = tmp_path / "sweeps"
    beside.mkdir()
    wrapper = "import runpy, sys\nrunpy.run_path(sys.argv.pop(1), run_name='__main__')\n"  # step_bench.py
    (beside / "bench.py").write_text(wrapper)
    command = ["{python}", "{sweep_dir}/bench.py", *COMMAND[1:]]
    path = beside / "bisect.yaml"
    path.write_text(yaml.safe_dump(bisect_sweep(repo, command=command)))
    monkeypatch.chdir(repo.path)
    assert bisect(path, repo) == EXIT_OK, capsys.readouterr()
    assert f"first bad commit: {repo.shas[5]}" in capsys.readouterr().out
    assert the_record(repo)["sweep_dir"] == str(beside.resolve())


def test_a_failing_commit_next_to_the_step_is_skipped_and_named(tmp_path, monkeypatch, capsys, home):
    models = step_models(16, 10)
    models[11] = CommitModel(step_ms=models[11].step_ms, fail=True)
    repo, path = setup(tmp_path, models, monkeypatch)
    assert bisect(path, repo) == EXIT_OK
    out = capsys.readouterr().out
    assert f"first bad commit: {repo.shas[10]}" in out
    assert f"skipped (bench failed): {repo.shas[11]}" in out
    record = the_record(repo)
    assert record["skipped"] == [repo.shas[11]]
    (skip,) = [s for s in record["steps"] if s["mark"] == "skip"]
    assert skip["sha"] == repo.shas[11] and "this commit's bench is broken" in skip["reason"]


def test_a_failing_commit_just_before_the_step_leaves_both_undecided(tmp_path, monkeypatch, capsys, home):
    models = step_models(16, 10)
    models[9] = CommitModel(fail=True)
    repo, path = setup(tmp_path, models, monkeypatch)
    assert bisect(path, repo) == EXIT_GATE_INCONCLUSIVE
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert "UNDECIDED" in last and f"{repo.shas[9][:12]}..{repo.shas[10][:12]}" in last
    assert the_record(repo)["remaining"] == [repo.shas[9], repo.shas[10]]


def test_no_step_between_good_and_bad_exits_2(tmp_path, monkeypatch, capsys, home):
    repo, path = setup(tmp_path, [CommitModel() for _ in range(6)], monkeypatch)
    assert bisect(path, repo) == EXIT_INVALID
    last = capsys.readouterr().err.strip().splitlines()[-1]  # after the runs' progress lines
    assert "does not FAIL the gate" in last and "PASS" in last and last.startswith("shasweep: error:")
    record = the_record(repo)
    assert record["status"] == "no_regression" and [s["role"] for s in record["steps"]] == ["preflight"]


def test_a_bad_commit_whose_bench_fails_is_a_run_failure(tmp_path, monkeypatch, capsys, home):
    repo, path = setup(tmp_path, [CommitModel(), CommitModel(), CommitModel(fail=True)], monkeypatch)
    assert bisect(path, repo) == EXIT_RUN_FAILED
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert "FAILED" in last and "the bench of --bad" in last and "shasweep bisect --resume" in last
    assert the_record(repo)["status"] == "failed"


def test_a_step_too_noisy_to_decide_exits_4_with_the_remaining_range(tmp_path, monkeypatch, capsys, home):
    noisy = CommitModel(alternate=(0.6, 1.4))  # every round of the step lands on another side of the bound
    models = [CommitModel(), *[noisy] * 6, CommitModel(step_ms=10 / 0.9)]
    repo, path = setup(tmp_path, models, monkeypatch)
    assert bisect(path, repo) == EXIT_GATE_INCONCLUSIVE
    out = capsys.readouterr().out
    last = out.strip().splitlines()[-1]
    assert "UNDECIDED" in last and "INCONCLUSIVE" in last
    assert f"one of 7 commits {repo.shas[1][:12]}..{repo.shas[7][:12]}" in last
    record = the_record(repo)
    assert record["status"] == "undecided" and record["remaining"] == list(repo.shas[1:])
    assert record["steps"][-1]["verdict"] == "INCONCLUSIVE"


def test_bad_input_exits_2_naming_the_key(tmp_path, monkeypatch, capsys, home):
    repo, path = setup(tmp_path, step_models(4, 2), monkeypatch, cases=["sac/fake/none", "sac/other/none"])
    assert bisect(path, repo) == EXIT_INVALID
    assert "cases: a bisect takes exactly one case" in capsys.readouterr().err
    path.write_text(yaml.safe_dump(bisect_sweep(repo)))
    assert main(["bisect", str(path), "--good", "no-such-ref", "--bad", "HEAD"]) == EXIT_INVALID
    assert "'no-such-ref' is not a commit" in capsys.readouterr().err
    assert not (repo.path / "results" / "runs").exists(), "nothing was dispatched"


def test_a_killed_bisect_resumes_without_measuring_a_sha_twice(tmp_path, monkeypatch, capsys, home):
    # runs of >= 0.5 s, so the kill lands while the third step's sweep still has runs to do
    repo, path = setup(tmp_path, step_models(16, 5), monkeypatch, command=[*COMMAND, "--sleep-ms", "250"])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    argv = [sys.executable, "-m", "orchestrator.cli", "bisect", str(path), "--good", repo.shas[0],
            "--bad", "HEAD", "--no-progress"]
    proc = subprocess.Popen(argv, cwd=repo.path, env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    records = repo.path / "results" / "bisect"

    def inside_third_step() -> bool:
        """Two steps recorded and a run of the third step's sweep written: kill it mid-sweep."""
        files = [p for p in records.glob("*.json") if p.stat().st_size]
        if not files or len(json.loads(files[0].read_text())["steps"]) < 2:
            return False
        recorded = {s["sweep_id"] for s in json.loads(files[0].read_text())["steps"]}
        runs = repo.path / "results" / "runs"
        return any(any(d.glob("*.parquet")) for d in runs.glob("sweep=*") if d.name[6:] not in recorded)

    try:
        wait_for(inside_third_step, "a run of the bisect's third step", timeout_s=300)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    before = the_record(repo)
    done = {s["sha"]: s["sweep_id"] for s in before["steps"]}
    assert before["status"] == "running"

    assert main(["bisect", "--resume", "latest", "--no-progress"]) == EXIT_OK
    out = capsys.readouterr().out
    assert f"first bad commit: {repo.shas[5]}" in out
    assert "resuming" in out and "(the others are ok)" in out, "the interrupted step's sweep was resumed"
    after = the_record(repo)
    assert after["bisect_id"] == before["bisect_id"] and after["first_bad"] == repo.shas[5]
    assert {s["sha"]: s["sweep_id"] for s in after["steps"] if s["sha"] in done} == done, "steps reused"
    runs = pd.read_parquet(repo.path / "results" / "runs", columns=["sweep_id", "sha", "side"])
    cand = runs[runs["side"] == "cand"]
    assert (cand.groupby("sha")["sweep_id"].nunique() == 1).all(), "no SHA measured in two sweeps"
    assert len(set(cand["sha"])) == len(after["steps"]) <= math.ceil(math.log2(16)) + 1
