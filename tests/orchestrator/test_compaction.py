"""Compaction (store.compact): one runs file and one steps file per finished sweep, sorted for the
queries that matter; resume and re-runs of a compacted sweep; damaged compacted files."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from store_roots import plain_runs, plain_steps, runs_seen, steps_seen, write_sweep
from test_results import outcome, planned

from orchestrator.cli.main import main
from orchestrator.errors import EXIT_OK, EXIT_RUN_FAILED
from orchestrator.store import compact
from orchestrator.store.parquet import write_run
from orchestrator.store.partitions import RUN_KEYS_METADATA
from orchestrator.store.query import Where, read_runs, run_statuses

SWEEP = "c-20260101T000000"


@pytest.fixture
def keys(tmp_path):
    return write_sweep(tmp_path, SWEEP)


def part(root: Path, kind: str) -> Path:
    (path,) = (root / kind / f"sweep={SWEEP}").glob("part-*.parquet")
    return path


def test_every_row_kept_with_its_types_and_sorted_for_the_queries(tmp_path, keys):
    root = tmp_path / "results"
    before_runs, before_steps = read_runs(root), steps_seen(root)
    outcome_ = compact.compact_sweep(root, SWEEP)
    assert (outcome_.runs, outcome_.files_before, outcome_.files_after) == (8, 16, 2)
    after = read_runs(root)
    assert after.dtypes.to_dict() == before_runs.dtypes.to_dict()
    def by_key(frame):
        return frame.sort_values("run_key").reset_index(drop=True)

    assert by_key(after).equals(by_key(before_runs))
    assert steps_seen(root) == before_steps
    runs = pq.read_table(part(root, "runs")).to_pandas()
    order = runs[["case", "side", "sha", "order"]].to_records(index=False).tolist()
    assert order == sorted(order), "runs sorted by case, side, SHA, plan order"
    steps = pq.read_table(part(root, "steps")).to_pandas()
    assert steps["phase"].is_monotonic_increasing, "steps grouped by phase"
    footer = pq.read_metadata(part(root, "steps")).metadata[RUN_KEYS_METADATA]
    assert sorted(json.loads(footer)) == sorted(keys)
    assert pq.ParquetFile(part(root, "steps")).metadata.row_group(0).column(4).statistics is not None


def test_resume_of_a_compacted_sweep_reruns_in_files_of_their_own(tmp_path, keys):
    root = tmp_path / "results"
    failed = keys[:2]
    for key in failed:  # two runs failed the first time
        run = dataclasses.replace(planned(tmp_path, key, SWEEP), case="sac/g1_walk_flat/mujoco")
        write_run(run, outcome(status="failed", throughput=None))
    compact.compact_sweep(root, SWEEP)
    rows = (plain_runs(root), plain_steps(root))
    statuses = run_statuses(root, SWEEP)
    assert [statuses[key] for key in failed] == ["failed", "failed"]
    compact.release_for_rerun(root, SWEEP, [k for k, s in statuses.items() if s != "ok"])
    singles = sorted(p.stem for p in (root / "runs" / f"sweep={SWEEP}").glob("[!p]*.parquet"))
    assert singles == sorted(failed), "the runs --resume may run again are out of the part"
    assert (plain_runs(root), plain_steps(root)) == rows, "no run twice, none lost"
    run = dataclasses.replace(planned(tmp_path, failed[0], SWEEP), case="sac/g1_walk_flat/mujoco")
    write_run(run, outcome(throughput=777.0))  # the re-run replaces its own two files only
    assert (failed[0], 777.0) in [(k, t) for _, k, t in plain_runs(root)] and len(plain_runs(root)) == 8
    compact.compact_sweep(root, SWEEP)  # `run --resume` compacts at its end
    assert run_statuses(root, SWEEP)[failed[0]] == "ok" and len(runs_seen(root)) == 8
    assert len(list((root / "runs" / f"sweep={SWEEP}").iterdir())) == 1


def test_a_run_written_again_into_a_compacted_sweep_wins_over_its_row(tmp_path, keys):
    """A worker that outlived its client writes a run of a sweep already compacted: shasweep's
    readers take the run's own file, and the next compaction folds it in."""
    root = tmp_path / "results"
    compact.compact_sweep(root, SWEEP)
    run = dataclasses.replace(planned(tmp_path, keys[3], SWEEP), case="sac/g1_walk_flat/mujoco")
    write_run(run, outcome(throughput=555.0))
    seen = runs_seen(root)
    assert len(seen) == 8 and (SWEEP, keys[3], 555.0) in seen
    assert run_statuses(root, SWEEP)[keys[3]] == "ok"
    assert len(read_runs(root, Where(run_keys=[keys[3]]))) == 1
    compact.compact_sweep(root, SWEEP)
    assert runs_seen(root) == seen == plain_runs(root)


def test_a_damaged_compacted_file_is_skipped_then_rebuilt_from_the_reruns(tmp_path, keys, capsys):
    root = tmp_path / "results"
    other = write_sweep(tmp_path, "d-20260102T000000", 1)
    for sweep in (SWEEP, "d-20260102T000000"):
        compact.compact_sweep(root, sweep)
    damaged = part(root, "runs")
    os.truncate(damaged, damaged.stat().st_size // 2)
    capsys.readouterr()
    assert [k for _, k, _ in runs_seen(root)] == sorted(other), "the other sweep still reads"
    assert run_statuses(root, SWEEP) == {}, "--resume runs every run of it again"
    err = capsys.readouterr().err
    assert err.count(str(damaged)) == 1 and "Traceback" not in err

    assert main(["compact", SWEEP, "--results", str(root)]) == EXIT_RUN_FAILED
    out = capsys.readouterr().out
    assert f"{damaged} is damaged and 8 of its runs are readable nowhere else" in out
    assert f"shasweep run --resume {SWEEP}" in out and damaged.exists()

    for key in keys:  # what --resume does: every run of it again, each in its own files
        case = "ppo/go2_joystick_flat/mujoco" if "go2" in key else "sac/g1_walk_flat/mujoco"
        write_run(dataclasses.replace(planned(tmp_path, key, SWEEP), case=case), outcome())
    assert main(["compact", SWEEP, "--results", str(root)]) == EXIT_OK
    assert "damaged files moved to" in capsys.readouterr().out
    assert (root / "damaged" / "runs" / f"sweep={SWEEP}" / damaged.name).exists()
    assert sorted(k for _, k, _ in runs_seen(root)) == sorted(keys + other) == sorted(
        k for _, k, _ in plain_runs(root))


def test_a_damaged_compacted_steps_file_sends_its_runs_to_resume(tmp_path, keys, capsys):
    root = tmp_path / "results"
    compact.compact_sweep(root, SWEEP)
    damaged = part(root, "steps")
    os.truncate(damaged, damaged.stat().st_size // 2)
    assert set(run_statuses(root, SWEEP).values()) == {None}, "steps lost: every run of it is re-run"
    assert len(runs_seen(root)) == 8, "the runs rows still read"
    assert compact.compact_sweep(root, SWEEP).blocked
    assert str(damaged) in capsys.readouterr().err


def test_an_interrupted_compaction_is_finished_or_undone_by_the_next(tmp_path, keys):
    root = tmp_path / "results"
    staging = compact.staging_dir(root, SWEEP)
    (staging / "new-runs").mkdir(parents=True)
    (staging / "new-runs" / "part-x.parquet").write_bytes(b"half written")  # no commit.json: never committed
    assert runs_seen(root) == plain_runs(root) and len(runs_seen(root)) == 8
    compact.compact_sweep(root, SWEEP)
    assert not staging.exists() and len(runs_seen(root)) == 8
