"""Compaction of a results root whose tables live on another file system: ``runs/`` and ``steps/`` are
links to directories on a tmpfs (``/dev/shm``) while the root is on the disk. It compacts, every run
stays readable exactly once, and it finishes what an older shasweep left there: a compaction
committed with its new partitions on the root's file system, which failed with EXDEV on every try
and left ``.compacting/<id>`` behind. A fleet's run set aside is moved across too."""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from store_roots import plain_runs, plain_steps, runs_seen, steps_seen, write_sweep

from orchestrator.cli.main import main
from orchestrator.errors import EXIT_OK
from orchestrator.store import compact
from orchestrator.store.parquet import supersede_run
from orchestrator.store.partitions import KINDS, partition_dir

SWEEP, OTHER = "x-20260101T000000", "y-20260102T000000"
OTHER_FS = Path("/dev/shm")


@pytest.fixture
def split_root(tmp_path):
    """A root with its two tables on another file system; (root, where the tables are, what to read)."""
    if not OTHER_FS.is_dir() or os.stat(OTHER_FS).st_dev == os.stat(tmp_path).st_dev:
        pytest.skip(f"{OTHER_FS} is not a file system apart from {tmp_path}")
    elsewhere = Path(tempfile.mkdtemp(dir=OTHER_FS, prefix="shasweep-tables-"))
    root = tmp_path / "results"
    root.mkdir()
    for kind in KINDS:
        (elsewhere / kind).mkdir()
        (root / kind).symlink_to(elsewhere / kind)
    write_sweep(tmp_path, SWEEP, 0)
    write_sweep(tmp_path, OTHER, 1, repeats=1)
    assert os.stat(partition_dir(root, "runs", SWEEP)).st_dev != os.stat(root).st_dev
    yield root, elsewhere, (runs_seen(root), steps_seen(root))
    shutil.rmtree(elsewhere)


def assert_compacted(root: Path, elsewhere: Path, expected: tuple[list, list]) -> None:
    assert (runs_seen(root), steps_seen(root)) == expected, "shasweep reads every run exactly once"
    assert (plain_runs(root), plain_steps(root)) == expected, "so do pandas and duckdb"
    for kind in KINDS:
        files = list(partition_dir(root, kind, SWEEP).iterdir())
        assert len(files) == 1 and files[0].name.startswith("part-"), files
    assert not compact.staging_dir(root, SWEEP).exists(), "nothing left under the root"
    assert not (elsewhere / compact.STAGING / SWEEP).exists(), "nor beside the tables"
    assert (root / "runs").is_symlink(), "the link is kept: the table is still on its own file system"


def test_a_root_whose_tables_are_on_another_file_system_compacts(split_root, capsys):
    root, elsewhere, expected = split_root
    assert main(["compact", "--all", "--results", str(root)]) == EXIT_OK
    out = capsys.readouterr()
    assert f"compacted {SWEEP}: 8 runs, 16 files -> 2" in out.out and "warning" not in out.err, out
    assert_compacted(root, elsewhere, expected)


def test_what_a_compaction_that_failed_with_exdev_left_is_finished(split_root, monkeypatch, capsys):
    root, elsewhere, expected = split_root
    with monkeypatch.context() as older:  # as shasweep staged before: always under the root
        older.setattr(compact, "table_staging", lambda root, kind, sweep: compact.staging_dir(root, sweep),
                      raising=False)
        with pytest.raises(OSError) as raised:
            compact.compact_sweep(root, SWEEP)
    assert raised.value.errno == errno.EXDEV
    assert (compact.staging_dir(root, SWEEP) / "commit.json").exists(), "committed, never swapped"
    assert (runs_seen(root), steps_seen(root)) == expected and plain_runs(root) == expected[0]
    half = elsewhere / compact.STAGING / SWEEP / "new-runs"  # a copy across a crash cut short
    half.mkdir(parents=True)
    (half / "part-0.parquet").write_bytes(b"half")
    assert main(["compact", SWEEP, "--results", str(root)]) == EXIT_OK, capsys.readouterr()
    assert_compacted(root, elsewhere, expected)


def test_a_run_set_aside_from_a_table_on_another_file_system_is_copied_to_the_root(split_root):
    root, _, expected = split_root
    key = sorted(partition_dir(root, "runs", SWEEP).iterdir())[0].stem
    supersede_run(root, SWEEP, key, "h1")  # a fleet's round redone elsewhere
    aside = root / "superseded" / f"sweep={SWEEP}"
    assert [len(list((aside / kind).iterdir())) for kind in KINDS] == [1, 1]
    assert key not in [row[1] for row in runs_seen(root)] and len(runs_seen(root)) == len(expected[0]) - 1
    assert not (partition_dir(root, "runs", SWEEP) / f"{key}.parquet").exists()
