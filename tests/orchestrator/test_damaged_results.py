"""Results that heal: a damaged runs or steps file is named and skipped by every reader, marks its run
for ``--resume``; files are written steps first, runs last, atomically; stale temporary files go."""

from __future__ import annotations

import errno
import os
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from test_results import outcome, planned

from orchestrator.analysis.drift import load_earlier_runs
from orchestrator.analysis.history_model import HistoryQuery, load_case_history
from orchestrator.analysis.plotted_runs import load_steps
from orchestrator.analysis.report_model import load_runs
from orchestrator.contract import host_id
from orchestrator.spec.record import SweepRecord
from orchestrator.store import atomic, parquet
from orchestrator.store.parquet import remove_stale_results_temps, run_files, write_run
from orchestrator.store.query import Where, read_runs, run_statuses
from orchestrator.store.records import write_record


def truncate_half(path: Path) -> None:
    """What `truncate -s 50%` does to a file: keep its first half."""
    os.truncate(path, path.stat().st_size // 2)


@pytest.fixture
def two_runs(tmp_path):
    """Sweep s1 with two ok runs; returns their PlannedRuns."""
    runs = [planned(tmp_path, "r1"), planned(tmp_path, "r2")]
    for run in runs:
        write_run(run, outcome())
    return runs


def test_a_truncated_steps_file_is_skipped_and_marks_its_run_for_resume(two_runs, tmp_path, capsys):
    root = tmp_path / "results"
    damaged = run_files(two_runs[0]).steps
    truncate_half(damaged)
    with pytest.raises(Exception):  # noqa: B017,PT011 - this is what plain pyarrow/pandas readers meet
        pd.read_parquet(root / "steps")
    steps = load_steps(root, "s1", phases=("physics_ms",))
    assert set(steps["run_key"]) == {"r2"}
    assert run_statuses(root, "s1") == {"r1": None, "r2": "ok"}, "resume re-runs the run with damaged steps"
    err = capsys.readouterr().err
    assert f"skipping damaged results file {damaged}" in err and "Traceback" not in err
    assert err.count(str(damaged)) == 1, "each damaged file is named once"


def test_a_truncated_runs_file_is_skipped_by_every_reader(two_runs, tmp_path, capsys):
    root = tmp_path / "results"
    damaged = run_files(two_runs[1]).runs
    truncate_half(damaged)
    assert read_runs(root)["run_key"].tolist() == ["r1"]
    assert read_runs(root, Where(sweeps=["s1"]))["run_key"].tolist() == ["r1"]
    assert load_runs(root, "s1", ["throughput"])["run_key"].tolist() == ["r1"]
    shown = load_case_history(root, HistoryQuery(case="sac/g1_walk_flat/mujoco")).runs
    assert shown["run_key"].tolist() == ["r1"]
    assert run_statuses(root, "s1") == {"r1": "ok", "r2": None}
    assert str(damaged) in capsys.readouterr().err


def test_drift_history_skips_a_damaged_file_of_an_old_sweep(tmp_path, capsys):
    root = tmp_path / "results"
    old = [planned(tmp_path, f"old{i}", sweep="old-20260101T000000") for i in range(2)]
    for run in old:
        write_run(run, outcome())
    def record(sweep_id: str, created: str) -> SweepRecord:
        spec = {"name": sweep_id[:3], "sides": {"base": {"ref": "main"}}, "baseline": "base", "cases": ["c"]}
        return SweepRecord.from_json({"sweep_id": sweep_id, "created": created, "planned_runs": 2,
                                      "spec": spec, "sides": {"base": {"sha": "a" * 40}}})

    write_record(root, record("old-20260101T000000", "2026-01-01"))
    truncate_half(run_files(old[0]).runs)
    past = load_earlier_runs(root, record("new-20260102T000000", "2026-01-02"), ["throughput"])
    assert len(past) == 1 and past["sweep_id"].tolist() == ["old-20260101T000000"]
    assert "old0.parquet" in capsys.readouterr().err


def test_a_file_whose_footer_is_fine_but_data_is_not_is_skipped_too(two_runs, tmp_path, capsys):
    path = run_files(two_runs[0]).runs
    data = bytearray(path.read_bytes())
    data[4:40] = b"\xff" * 36  # the first column chunk, footer intact
    path.write_bytes(bytes(data))
    pq.read_metadata(path)  # the footer check alone would let it through
    rows = read_runs(tmp_path / "results", Where(sweeps=["s1"]))
    assert "r2" in rows["run_key"].tolist()


def test_the_steps_file_goes_first_and_a_failed_write_leaves_the_old_pair(tmp_path, monkeypatch):
    run = planned(tmp_path, "r1")
    files = write_run(run, outcome())
    before = {p: p.read_bytes() for p in (files.runs, files.steps)}
    renamed: list[str] = []
    real_replace = os.replace

    def recording_replace(src, dst):
        renamed.append(Path(dst).parent.parent.name)
        return real_replace(src, dst)

    monkeypatch.setattr(atomic.os, "replace", recording_replace)
    write_run(run, outcome())
    assert renamed == ["steps", "runs"], "steps renamed into place before the runs row"

    real_write = parquet.write_table

    def enospc(table, where, options):
        if "/runs/" in str(where):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(table, where, options)

    monkeypatch.setattr(parquet, "write_table", enospc)
    with pytest.raises(OSError, match="No space left"):
        write_run(run, outcome(throughput=5.0))
    assert {p: p.read_bytes() for p in (files.runs, files.steps)} == before, "the old pair is untouched"
    assert not [p for p in files.runs.parent.parent.parent.rglob(".*.tmp")], "no temporary file left"


def test_stale_temporary_files_are_removed_by_the_next_writer_and_by_gc(tmp_path):
    run = planned(tmp_path, "r1")
    directory = run_files(run).runs.parent
    directory.mkdir(parents=True)
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = directory / f".r0.parquet.{dead.pid}@{host_id()}.tmp"
    stale.write_bytes(b"half a file")
    mine = directory / f".r9.parquet.{os.getpid()}@{host_id()}.tmp"  # a live writer's: kept
    mine.write_bytes(b"being written")
    elsewhere = directory / f".r8.parquet.{dead.pid}@another-host.tmp"  # only its host may judge it
    elsewhere.write_bytes(b"being written there")
    legacy = directory / f".r7.parquet.{dead.pid}.tmp"  # names no host: stale only when old
    legacy.write_bytes(b"half a file")
    write_run(run, outcome())
    assert not stale.exists() and mine.exists() and elsewhere.exists() and legacy.exists()

    old = directory.parent.parent / "sweeps" / f".x.json.{os.getpid()}@{host_id()}.tmp"
    old.parent.mkdir(parents=True)
    old.write_text("{")
    long_ago = (datetime.now(UTC) - timedelta(hours=2)).timestamp()
    os.utime(old, (long_ago, long_ago))
    assert remove_stale_results_temps(tmp_path / "results") == [old], "old temp files are stale whatever pid"
