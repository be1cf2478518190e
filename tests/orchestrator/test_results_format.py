"""Every results file carries its format version (``spec.results_format``): what this shasweep writes
is version ``FORMAT_VERSION``; files written before versions existed read as version 1; a file of a
newer version is refused, exit 2, naming the file and both versions, by every reader that meets it."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from test_results import outcome, planned

from orchestrator.cli.main import main
from orchestrator.contract import StepRecord
from orchestrator.errors import EXIT_INVALID
from orchestrator.spec.record import SweepRecord
from orchestrator.spec.results_format import (
    FORMAT_VERSION,
    METADATA_KEY,
    RECORD_KEY,
    UNVERSIONED,
    NewerFormatError,
    checked_version,
)
from orchestrator.store import bisects, compact, index, step_log
from orchestrator.store.parquet import write_run
from orchestrator.store.query import Where, read_runs
from orchestrator.store.step_log import StepLog

UNVERSIONED_ROOT = Path(__file__).resolve().parents[1] / "data" / "roots" / "unversioned"
SWEEP = "fixture-b-20261206T112721"
NEWER = FORMAT_VERSION + 1


def version_of(path: Path) -> int:
    return int((pq.read_schema(path).metadata or {}).get(METADATA_KEY, b"1"))


def test_the_version_scheme():
    assert (UNVERSIONED, FORMAT_VERSION) == (1, 2)
    assert [checked_version(v, "f") for v in (None, 1, "2", b"2")] == [1, 1, 2, 2]
    with pytest.raises(NewerFormatError, match=f"f is results format version {NEWER}, and this shasweep "
                                               f"reads versions 1 to {FORMAT_VERSION}"):
        checked_version(NEWER, "f")
    for bad in (0, "two", True, 1.5):
        with pytest.raises(Exception, match="is not a version"):
            checked_version(bad, "f")


def test_what_this_shasweep_writes_carries_its_version(tmp_path):
    run = planned(tmp_path, "r1")
    files = write_run(run, outcome())
    assert version_of(files.runs) == version_of(files.steps) == FORMAT_VERSION
    rows = read_runs(tmp_path / "results", Where(sweeps=[run.sweep_id]))
    assert rows[RECORD_KEY].tolist() == [FORMAT_VERSION]
    compact.compact_sweep(tmp_path / "results", run.sweep_id)
    parts = sorted((tmp_path / "results").glob("*/sweep=*/part-*.parquet"))
    assert len(parts) == 2 and {version_of(path) for path in parts} == {FORMAT_VERSION}
    indexed = sorted((tmp_path / "results" / "index").rglob("*.parquet"))
    assert indexed and {version_of(path) for path in indexed} == {FORMAT_VERSION}
    record = SweepRecord.from_json(json.loads((UNVERSIONED_ROOT / "sweeps" / f"{SWEEP}.json").read_text()))
    assert next(iter(record.to_json().items())) == (RECORD_KEY, FORMAT_VERSION), "first, as written"
    bisects.write_bisect(tmp_path, "b1", {"status": "running"})
    written = json.loads(bisects.bisect_path(tmp_path, "b1").read_text())
    assert written == {RECORD_KEY: FORMAT_VERSION, "status": "running"}
    assert bisects.read_bisect(tmp_path, "b1") == {"status": "running"}


def test_a_spooled_steps_file_carries_it_too(tmp_path, monkeypatch):
    monkeypatch.setattr(step_log, "ROW_GROUP_ROWS", 2)
    spool = tmp_path / "spool.parquet"
    steps = StepLog(spool=spool, sweep_id="s1", run_key="r1")
    for step in range(5):
        steps.append(StepRecord(step, False, {"x_ms": 1.0}))
    assert steps.spooled
    files = write_run(planned(tmp_path, "r1"), replace(outcome(), steps=steps))
    assert version_of(files.steps) == FORMAT_VERSION and pq.read_table(files.steps).num_rows == 5


def newer_parquet(path: Path) -> None:
    """Rewrite ``path`` as a newer shasweep would have written it (its rows as they are)."""
    table = pq.read_table(path)
    pq.write_table(table.replace_schema_metadata({**(table.schema.metadata or {}),
                                                  METADATA_KEY: str(NEWER).encode()}), path)


def newer_record(path: Path) -> None:
    path.write_text(json.dumps({**json.loads(path.read_text()), RECORD_KEY: NEWER}))


@pytest.fixture
def root(tmp_path) -> Path:
    copy = tmp_path / "results"
    shutil.copytree(UNVERSIONED_ROOT, copy)
    return copy


@pytest.mark.parametrize("kind, argv", [
    ("record", ["report", SWEEP]),
    ("record", ["waive", SWEEP, "--case", "sac/fake/none", "--reason", "x"]),
    ("runs", ["report", SWEEP]),
    ("runs", ["compare", "fixture-20261206T112704", SWEEP]),
    ("runs", ["history", "--case", "sac/fake/none"]),
    ("steps", ["history", "--case", "sac/fake/none", "--metric", "physics_ms", "--steps"]),
    ("runs", ["compact", SWEEP]),
    ("index", ["history", "--case", "sac/fake/none"]),
])
def test_a_newer_file_is_refused_with_exit_2_naming_it_and_both_versions(root, capsys, kind, argv):
    if kind == "record":
        path = root / "sweeps" / f"{SWEEP}.json"
        newer_record(path)
    elif kind == "index":
        path = sorted((root / "index" / "delta").glob("*.parquet"))[0]
        newer_parquet(path)
    else:
        (path,) = (root / kind / f"sweep={SWEEP}").glob("part-*.parquet")
        newer_parquet(path)
    before = path.read_bytes()
    assert main([*argv, "--results", str(root)]) == EXIT_INVALID
    err = capsys.readouterr().err
    assert f"{path} is results format version {NEWER}, and this shasweep reads versions 1 to " \
           f"{FORMAT_VERSION}" in err, err
    assert "Traceback" not in err and path.read_bytes() == before, "refused, and left as it was"


def test_a_newer_single_run_file_is_refused(tmp_path):
    run = planned(tmp_path, "r1")
    files = write_run(run, outcome())
    newer_parquet(files.runs)
    with pytest.raises(NewerFormatError, match=str(files.runs)):
        read_runs(tmp_path / "results", Where(sweeps=[run.sweep_id]))
    with pytest.raises(NewerFormatError, match=str(files.runs)):
        index.scan_partition(tmp_path / "results", run.sweep_id)


def test_a_newer_bisect_record_is_refused(tmp_path):
    bisects.write_bisect(tmp_path, "b1", {"status": "running"})
    newer_record(bisects.bisect_path(tmp_path, "b1"))
    with pytest.raises(NewerFormatError, match=f"b1.json is results format version {NEWER}"):
        bisects.read_bisect(tmp_path, "b1")


def test_version_1_rows_read_in_todays_shape(root):
    """The fake bench's command passes no {variant}: version 1 stored the spec's default anyway,
    version 2 stores none; read, both have none, and the index's settings digest agrees."""
    stored = pq.read_table(next((root / "runs" / f"sweep={SWEEP}").glob("part-*.parquet")))
    assert set(stored.column("variant").to_pylist()) == {"manager"} and RECORD_KEY not in stored.column_names
    runs = read_runs(root, Where(sweeps=[SWEEP]))
    assert runs["variant"].isna().all() and runs["run_key"].tolist()
    assert read_runs(root, Where(sweeps=[SWEEP]), ["run_key", "variant"])["variant"].isna().all(), \
        "without asking for the command too"
    command = stored.column("command")[0].as_py()
    digest = index.settings_digest
    assert digest("manager", "{}", "{}", command) == digest(None, "{}", "{}", command)
