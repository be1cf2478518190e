"""Fault drills on real processes, continued: Ctrl-C as a terminal sends it (SIGINT to the client's
whole process group), a damaged steps file healed by ``--resume``, two shasweep homes on one
machine that share its host lock and so never overlap, and the embedded cluster's nanny settings
kept out of the bench's environment."""

from __future__ import annotations

import json
import os
import signal
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pandas as pd
import psutil
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "orchestrator"))
from drill_helpers import bench_pids, client, write_sweep  # noqa: E402
from fakebench.fakerepo import make_fake_repo  # noqa: E402
from fakebench.waits import is_gone, wait_for  # noqa: E402

from orchestrator.errors import EXIT_OK, EXIT_RUN_FAILED  # noqa: E402


@pytest.mark.slow
def test_ctrl_c_to_the_client_process_group_is_one_clean_interruption(tmp_path):
    repo = make_fake_repo(tmp_path)
    home = tmp_path / "home"
    sweep = write_sweep(repo, step_ms=3000)  # each run takes 30 s: Ctrl-C lands in the first one
    proc = client(repo, ["run", str(sweep), "--no-progress"], home, tmp_path / "client.out",
                  SHASWEEP_LOCK=str(tmp_path / "bench.lock"))
    bench = wait_for(lambda: (bench_pids(home) or [None])[0], "the first run's bench")
    group = [p.pid for p in psutil.Process(proc.pid).children(recursive=True)]
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does: the whole foreground group
    assert proc.wait(timeout=120) == EXIT_RUN_FAILED
    out = (tmp_path / "client.out").read_text()
    assert "Traceback" not in out, out
    assert "interrupted" in out, out
    assert "workers died" not in out and "KilledWorker" not in out, out
    for pid in [bench, *group]:
        assert wait_for(lambda p=pid: is_gone(p), f"{pid} to exit"), "a process outlived the sweep"
    (record_path,) = (repo.path / "results" / "sweeps").glob("drill-*.json")
    record = json.loads(record_path.read_text())
    assert record["status"] == "stopped" and "interrupted" in record["stopped_reason"]
    assert [o["status"] for o in record["outcomes"]] == ["cancelled", "cancelled"]
    rows = pd.read_parquet(repo.path / "results" / "runs")
    assert rows["status"].tolist() == ["cancelled"], "the interrupted run has its row"


@pytest.mark.slow
def test_a_damaged_steps_file_is_healed_by_resume(tmp_path):
    repo = make_fake_repo(tmp_path)
    home = tmp_path / "home"
    lock = {"SHASWEEP_LOCK": str(tmp_path / "bench.lock")}
    sweep = write_sweep(repo, step_ms=5)
    first = client(repo, ["run", str(sweep), "--no-progress"], home, tmp_path / "first.out", **lock)
    assert first.wait(timeout=300) == EXIT_OK, (tmp_path / "first.out").read_text()
    root = repo.path / "results"
    (sweep_id,) = [p.stem for p in (root / "sweeps").glob("drill-*.json")]
    (damaged,) = (root / "steps" / f"sweep={sweep_id}").glob("*.parquet")  # compacted: both runs' steps
    os.truncate(damaged, damaged.stat().st_size // 2)  # `truncate -s 50%`

    report = client(repo, ["report", sweep_id], home, tmp_path / "report.out", **lock)
    assert report.wait(timeout=120) == EXIT_OK, "a damaged steps file does not change any verdict"
    out = (tmp_path / "report.out").read_text()
    assert f"skipping damaged results file {damaged}" in out and "Traceback" not in out

    resume = client(repo, ["run", "--resume", sweep_id, "--no-progress"], home, tmp_path / "resume.out",
                    **lock)
    assert resume.wait(timeout=300) == EXIT_OK, (tmp_path / "resume.out").read_text()
    out = (tmp_path / "resume.out").read_text()
    assert "resuming 2 of 2 runs" in out, out
    pd.read_parquet(root / "steps")  # readable again as a whole
    assert (root / "damaged" / "steps" / f"sweep={sweep_id}" / damaged.name).exists(), "kept aside"
    assert len(list((root / "runs" / f"sweep={sweep_id}").iterdir())) == 1, "compacted again by the resume"
    rows = pd.read_parquet(root / "runs")
    assert len(rows) == 2 and rows["run_key"].is_unique and (rows["status"] == "ok").all()


@pytest.mark.slow
def test_two_homes_on_one_machine_share_its_lock_and_never_overlap(tmp_path, monkeypatch):
    """Two users' sweeps (two SHASWEEP_HOMEs, two embedded clusters) with the default machine lock."""
    monkeypatch.delenv("SHASWEEP_LOCK", raising=False)
    for name in ("alice", "bob"):
        (tmp_path / name).mkdir()
    repos = [make_fake_repo(tmp_path / name) for name in ("alice", "bob")]
    sweeps = [write_sweep(repo, name=f"user{i}", step_ms=40, repeats=3) for i, repo in enumerate(repos)]
    outs = [tmp_path / f"user{i}.out" for i in range(2)]
    procs = [client(repo, ["run", str(sweep), "--no-progress"], tmp_path / f"home{i}", outs[i])
             for i, (repo, sweep) in enumerate(zip(repos, sweeps, strict=True))]
    with ThreadPoolExecutor(2) as pool:
        codes = list(pool.map(lambda p: p.wait(timeout=600), procs))
    assert codes == [EXIT_OK, EXIT_OK], [out.read_text() for out in outs]
    rows = pd.concat([pd.read_parquet(repo.path / "results" / "runs") for repo in repos])
    spans = sorted(zip(rows["started_at"], rows["ended_at"], strict=True))
    assert len(spans) == 12
    overlaps = [(a, b) for a, b in zip(spans, spans[1:], strict=False) if b[0] < a[1]]
    assert not overlaps, f"{len(overlaps)} bench runs of two homes overlapped on one machine"


@pytest.mark.slow
def test_the_embedded_cluster_gives_the_bench_the_same_environment_as_shasweep_worker(tmp_path, monkeypatch):
    """The embedded cluster's nanny injects MALLOC_TRIM_THRESHOLD_ into its worker; the bench must
    not inherit it, or one SHA would measure under other malloc settings than on `shasweep worker`."""
    from fakebench.fakerepo import make_run

    from orchestrator.dispatch.dispatcher import dispatch_runs

    monkeypatch.setenv("SHASWEEP_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SHASWEEP_LOCK", str(tmp_path / "bench.lock"))
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    repo = make_fake_repo(tmp_path)
    misbehave = Path(__file__).resolve().parents[1] / "orchestrator" / "fakebench" / "misbehave.py"
    run = make_run(repo, repo.shas[0], results_root=tmp_path / "results",
                   command=("{python}", str(misbehave), "--stream", "{stream}", "--mode", "env"))
    outcome = dispatch_runs([run], scheduler=None, continue_on_error=False, show_progress=False)
    assert outcome.runs[0].status == "ok", outcome.runs[0].error
    row = pd.read_parquet(tmp_path / "results" / "runs").iloc[0]
    assert pd.isna(row["audit_malloc_trim_threshold"]), "the nanny's malloc setting reached the bench"
