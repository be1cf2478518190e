"""The read layer (store.query) and the results index (store.index): the same rows whatever the layout,
only the files that can hold an answer opened, an index kept by writers and healed by readers."""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow.dataset as ds
import pytest
from store_roots import CASES, plain_runs, plain_steps, runs_seen, steps_seen, write_sweep

from orchestrator.analysis.history_model import HistoryQuery, load_case_history
from orchestrator.cli.main import main
from orchestrator.errors import EXIT_INVALID, EXIT_OK
from orchestrator.store import compact, index, query
from orchestrator.store.query import Where
from orchestrator.store.records import read_record, sweep_lock, write_record

SWEEPS = ("s-20260101T000000", "s-20260102T000000", "s-20260103T000000")


@pytest.fixture
def root(tmp_path):
    for day, sweep in enumerate(SWEEPS):
        write_sweep(tmp_path, sweep, day)
    return tmp_path / "results"


def files_under(root: Path, kind: str) -> list[Path]:
    return sorted((root / kind).rglob("*.parquet"))


@pytest.fixture
def opened(monkeypatch):
    """The data files the read layer opens (every read goes through pyarrow.dataset)."""
    seen: list[Path] = []
    real = ds.dataset

    def dataset(source, *args, **kwargs):
        seen.extend(Path(p) for p in (source if isinstance(source, list) else [source]))
        return real(source, *args, **kwargs)

    monkeypatch.setattr(ds, "dataset", dataset)
    return seen


def test_a_compacted_and_a_mixed_root_read_the_same_everywhere(root):
    runs, steps = runs_seen(root), steps_seen(root)
    assert len(runs) == 3 * 8 and len(steps) == 3 * 8 * 8
    assert plain_runs(root) == [(s, k, t) for s, k, t in runs] and plain_steps(root) == steps
    seen = (runs, steps, runs, steps)
    compact.compact_sweep(root, SWEEPS[0])  # a mixed root: one sweep compacted, two per run
    assert (runs_seen(root), steps_seen(root), plain_runs(root), plain_steps(root)) == seen
    for sweep in SWEEPS[1:]:
        compact.compact_sweep(root, sweep)
    assert (runs_seen(root), steps_seen(root), plain_runs(root), plain_steps(root)) == seen
    assert len(files_under(root, "runs")) == len(files_under(root, "steps")) == 3, "one per sweep and table"


@pytest.mark.parametrize("compacted", [False, True])
def test_many_named_sweeps_are_found_through_the_index_alike(root, compacted, monkeypatch, opened):
    """Above ``LISTED_SWEEPS`` named sweeps a filtering question asks the index for the files: the
    same runs as listing the partitions, and no file of another sweep opened."""
    if compacted:
        for sweep in SWEEPS:
            compact.compact_sweep(root, sweep)
    index.rebuild(root)
    where = Where(sweeps=list(SWEEPS[1:]), cases=[CASES[1]], measured=True)
    listed = query.read_runs(root, where, ["run_key", "throughput"]).sort_values("run_key")
    monkeypatch.setattr(query, "LISTED_SWEEPS", 1)
    assert where.across_sweeps
    opened.clear()
    indexed = query.read_runs(root, where, ["run_key", "throughput"]).sort_values("run_key")
    assert indexed.reset_index(drop=True).equals(listed.reset_index(drop=True)) and len(listed) == 2 * 4
    assert {path.parent.name for path in opened} == {f"sweep={sweep}" for sweep in SWEEPS[1:]}


@pytest.mark.parametrize("compacted", [False, True])
def test_only_the_columns_and_runs_asked_for(root, compacted):
    if compacted:
        for sweep in SWEEPS:
            compact.compact_sweep(root, sweep)
    where = Where(cases=[CASES[1]], sides=["cand"], sha_prefix="cccc")
    runs = query.read_runs(root, where, ["run_key", "throughput"])
    assert list(runs.columns) == ["run_key", "throughput"]
    expected = sorted(f"{sweep}-go2_joystick_flat-cand-{r}" for sweep in SWEEPS for r in (0, 1))
    assert sorted(runs["run_key"]) == expected
    one = query.read_runs(root, Where(sweeps=[SWEEPS[1]], status="ok"), ["sweep_id"])
    assert set(one["sweep_id"]) == {SWEEPS[1]} and len(one) == 8
    steps = query.read_steps(root, Where(sweeps=[SWEEPS[2]], cases=[CASES[0]]), phases=["physics_ms"],
                             warmup=False)
    assert len(steps) == 4 * 3 and set(steps["phase"]) == {"physics_ms"} and not steps["warmup"].any()
    schema = query.runs_schema(root, Where(cases=[CASES[0]]))
    assert "physics_ms" in schema.names, "the phases the runs reported"
    assert "update_state.command.compute_ms" not in schema.names, "and none they did not"


@pytest.mark.parametrize("compacted", [False, True])
def test_a_question_across_sweeps_opens_only_the_files_that_hold_its_runs(tmp_path, opened, compacted):
    write_sweep(tmp_path, "a-20260101T000000", 0, host="bench1")
    write_sweep(tmp_path, "b-20260102T000000", 1, host="bench2")
    root = tmp_path / "results"
    if compacted:
        for sweep in ("a-20260101T000000", "b-20260102T000000"):
            compact.compact_sweep(root, sweep)
    index.rebuild(root)
    opened.clear()
    runs = query.read_runs(root, Where(hostnames=["bench2"], cases=[CASES[0]]), ["run_key", "throughput"])
    assert len(runs) == 4 and {p.parent.name for p in opened} == {"sweep=b-20260102T000000"}
    if not compacted:
        assert len(set(opened)) == 4, "one file per matching run, no other"


def test_history_reads_summary_rows_unless_steps_are_asked_for(root, opened):
    history = load_case_history(root, HistoryQuery(case=CASES[0], metric="physics_ms")).runs
    assert not [p for p in opened if "steps" in p.parts], "history reads the runs table only"
    assert history["physics_ms"].eq(2.0).all(), "the run's own mean (from its summary)"
    medians = load_case_history(root, HistoryQuery(case=CASES[0], metric="physics_ms", steps=True)).runs
    assert [p for p in opened if "steps" in p.parts]
    assert medians["physics_ms"].eq(4.0).all(), "median of the measured steps 3, 4, 5 ms"
    with pytest.raises(Exception, match="no measured steps of phase 'nope_ms'"):
        load_case_history(root, HistoryQuery(case=CASES[0], metric="nope_ms", steps=True))


def test_compaction_writes_the_index_and_readers_trust_it(root, capsys, monkeypatch):
    for sweep in SWEEPS:
        compact.compact_sweep(root, sweep)
    capsys.readouterr()
    scans = []
    monkeypatch.setattr(index, "scan_partition", lambda *a: scans.append(a) or pytest.fail("scanned"))
    found = query.lookup(root, Where(shas=["c" * 40], cases=[CASES[0]]))
    assert sorted(set(found["sweep_id"])) == list(SWEEPS) and len(found) == 3 * 2
    assert set(found["file"].str.startswith("part-")) == {True} and found["created"].notna().all()
    assert capsys.readouterr().err == "" and not scans


def test_a_missing_index_is_rebuilt_with_one_warning(root, capsys):
    assert not index.index_dir(root).exists()
    assert len(query.lookup(root)) == 24
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "results index" in err and "missing" in err
    assert (index.index_dir(root) / "delta").is_dir() or (index.index_dir(root) / "runs.parquet").exists()
    assert len(query.lookup(root)) == 24 and capsys.readouterr().err == "", "built once, then trusted"


def test_an_out_of_date_index_is_noticed_and_updated(root, tmp_path, capsys):
    index.rebuild(root)
    capsys.readouterr()
    write_sweep(tmp_path, SWEEPS[0], 0, repeats=3)  # a third round written into a finished sweep
    assert len(query.lookup(root, Where(sweeps=[SWEEPS[0]]))) == 12
    assert "out of date for 1 sweep" in capsys.readouterr().err
    assert len(query.lookup(root, Where(sweeps=[SWEEPS[0]]))) == 12 and capsys.readouterr().err == ""


def test_a_running_sweep_is_read_from_its_files_without_a_warning(root, tmp_path, capsys):
    index.rebuild(root)
    write_sweep(tmp_path, SWEEPS[2], 2, repeats=3)  # a third round being written
    write_record(root, dataclasses.replace(read_record(root, SWEEPS[2]), status="running"))
    capsys.readouterr()
    with sweep_lock(root, SWEEPS[2]):  # its client, dispatching it
        assert len(query.lookup(root, Where(sweeps=[SWEEPS[2]]))) == 12
        assert capsys.readouterr().err == ""
        assert SWEEPS[2] not in set(index.known_rows(root, SWEEPS[2])["sweep_id"]), "not written: it grows"


def test_a_sweep_whose_client_was_killed_is_indexed_once(root, tmp_path, capsys):
    """Recorded running, but no client holds its lock: its partition no longer grows, so the first
    reader writes its rows into the index (without a warning: a killed client could not index it)
    and later readers take them from there."""
    index.rebuild(root)
    write_sweep(tmp_path, SWEEPS[2], 2, repeats=3)
    write_record(root, dataclasses.replace(read_record(root, SWEEPS[2]), status="running"))
    capsys.readouterr()
    assert len(query.lookup(root, Where(sweeps=[SWEEPS[2]]))) == 12
    assert capsys.readouterr().err == ""
    assert len(index.known_rows(root, SWEEPS[2])) == 12
    assert len(query.lookup(root, Where(sweeps=[SWEEPS[2]]))) == 12
    assert capsys.readouterr().err == ""


def test_a_change_within_the_timestamp_granularity_is_not_missed(root, tmp_path):
    """Coarse directory timestamps: a partition changed right after it was indexed may keep its
    mtime; its files are compared with the index's then (git's "racy" entries)."""
    index.rebuild(root)
    partition = root / "runs" / f"sweep={SWEEPS[1]}"
    before = partition.stat()
    key = f"{SWEEPS[0]}-g1_walk_flat-base-0"
    shutil.copy(root / "runs" / f"sweep={SWEEPS[0]}" / f"{key}.parquet", partition / f"{key}.parquet")
    os.utime(partition, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert (partition.stat().st_ino, partition.stat().st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert key in set(query.lookup(root, Where(sweeps=[SWEEPS[1]]))["run_key"])


def test_two_processes_writing_the_index_at_once_lose_nothing(tmp_path):
    sweeps = [f"w-202601{day:02d}T000000" for day in range(1, 9)]
    for day, sweep in enumerate(sweeps):
        write_sweep(tmp_path, sweep, day, repeats=1)
    root = tmp_path / "results"
    script = textwrap.dedent("""
        import sys
        from orchestrator.store import compact, index
        index.FOLD_AT = 2  # fold at nearly every write: the two processes contend for the lock
        for sweep in sys.argv[2:]:
            compact.compact_sweep(sys.argv[1], sweep)
    """)
    procs = [subprocess.Popen([sys.executable, "-c", script, str(root), *sweeps[i::2]]) for i in (0, 1)]
    assert [p.wait(timeout=300) for p in procs] == [0, 0]
    index.fold(root)
    rows = index.known_rows(root, sweeps[0])
    assert rows.num_rows == 4
    everything = query.lookup(root)
    assert sorted(set(everything["sweep_id"])) == sweeps and len(everything) == 8 * 4


@pytest.mark.slow
def test_the_cli_compacts_indexes_and_refuses_what_it_cannot(root, capsys):
    with sweep_lock(root, SWEEPS[0]):  # being run by another process
        assert main(["compact", "--all", "--results", str(root)]) == EXIT_OK
        out = capsys.readouterr().out
        assert f"skipped {SWEEPS[0]}" in out and f"compacted {SWEEPS[1]}: 8 runs, 16 files -> 2" in out
        assert main(["compact", SWEEPS[0], "--results", str(root)]) == EXIT_INVALID
        assert "is being run by another shasweep process" in capsys.readouterr().err
    assert main(["compact", "latest", "--results", str(root)]) == EXIT_OK, "compacted already: nothing to do"
    assert main(["compact", "--all", "--results", str(root)]) == EXIT_OK
    assert "16 files -> 2" in capsys.readouterr().out
    assert main(["index", "--rebuild", "--results", str(root)]) == EXIT_OK
    assert "24 runs of 3 sweeps" in capsys.readouterr().out
    assert main(["compact", "--results", str(root)]) == EXIT_INVALID
    assert main(["index", "--results", str(root.parent / "nothing")]) == EXIT_INVALID
    assert "no runs recorded under" in capsys.readouterr().err
