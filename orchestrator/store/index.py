"""The index of a results root: one small table saying which run is where, so a question across
sweeps ("earlier runs of this SHA, case and host") is a lookup, not a scan of every file.

``<root>/index/runs.parquet`` (the base) and ``<root>/index/delta/*.parquet`` (one file per write)
hold one row per run: ``INDEX_COLUMNS`` (the sweep's ``created`` from its record, null for a sweep
without one; ``params_digest`` of variant, params, env and bench command: runs with equal digests are
comparable), the file holding it, and the fingerprint of its runs partition directory (inode and
mtime, as git's index fingerprints files) when it was indexed. A file with no run to read gets a
row with no run key and status ``DAMAGED`` or ``SHADOWED``; an empty partition one with no file.

Writers add a delta for each partition they change as a whole (``store.compact``; a reader that had
to scan): a delta replaces every row of its partitions, the newest write of a partition wins, so two
writers never need each other's lock. Folding deltas into the base and ``rebuild`` hold
``index/.lock``. Readers (``current``) trust a partition's rows while its directory's fingerprint is
unchanged; one written within ``RACY_NS`` of its indexing (timestamps are coarse) is trusted only
if its files and sizes are still the indexed ones. Any other partition is scanned, and, unless its
sweep is still running, named in one warning and indexed anew.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
from filelock import FileLock, Timeout

from orchestrator.store.atomic import write_with
from orchestrator.store.damaged import READ_ERRORS, read_table_skipping
from orchestrator.store.partitions import Holdings, holdings, is_part, partition_dir, sweep_partitions
from orchestrator.store.records import record_path

INDEX_COLUMNS: tuple[str, ...] = ("sweep_id", "run_key", "case", "side", "sha", "host_id", "host_hostname",
                                  "params_digest", "created", "status", "reused", "file")
INDEX_SCHEMA = pa.schema(
    [(name, pa.string()) for name in INDEX_COLUMNS[:INDEX_COLUMNS.index("reused")]]
    + [("reused", pa.bool_()), ("file", pa.string()), ("file_size", pa.int64()),
       ("started_at", pa.timestamp("us", tz="UTC")), ("partition_inode", pa.int64()),
       ("partition_mtime_ns", pa.int64()), ("indexed_ns", pa.int64())])
# What a run's files give the index (absent columns read as null).
SOURCE_SCHEMA = pa.schema([(name, pa.string()) for name in (
    "run_key", "case", "side", "sha", "host_id", "host_hostname", "variant", "params", "env", "command",
    "status", "reused_from")] + [("started_at", pa.timestamp("us", tz="UTC"))])
# ``status`` of a row that names a file but no run: one that cannot be read, or a part whose every
# run was written again in its own file.
DAMAGED, SHADOWED = "damaged file", "shadowed file"
RACY_NS = 2_000_000_000
FOLD_AT = 16  # deltas that make the next writer fold them into the base
LOCK_TIMEOUT_S = 120.0
_warned: set[str] = set()


def index_dir(root: str | Path) -> Path:
    return Path(root) / "index"


def _base(root: str | Path) -> Path:
    return index_dir(root) / "runs.parquet"


def _deltas(root: str | Path) -> list[Path]:
    directory = index_dir(root) / "delta"
    try:
        return sorted(p for p in directory.iterdir() if p.suffix == ".parquet" and not p.name.startswith("."))
    except FileNotFoundError:
        return []


def settings_digest(variant: object, params: object, env: object, command: object) -> str:
    """16 hex digits identifying a run's settings: variant, params, env, bench command (as stored)."""
    text = "\0".join("" if value is None else str(value) for value in (variant, params, env, command))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def scan_partition(root: str | Path, sweep_id: str, stat: os.stat_result | None = None) -> pa.Table:
    """The index rows of one sweep, read from its files (the fingerprint taken before listing them,
    so a change during the scan makes them stale, never wrongly fresh)."""
    directory = partition_dir(root, "runs", sweep_id)
    stat = stat or directory.stat()
    while True:
        try:
            held = holdings(root, "runs", sweep_id)
            sources = _sources(held)
            break
        except FileNotFoundError:  # replaced while we read it: the new one has a new fingerprint
            stat = directory.stat()
    sizes = {path.name: size for path, size in held.sizes.items()}
    common = {"sweep_id": sweep_id, "created": _created(root, sweep_id),
              "partition_inode": stat.st_ino, "partition_mtime_ns": stat.st_mtime_ns,
              "indexed_ns": time.time_ns()}
    rows = [common | {name: run[name] for name in ("run_key", "case", "side", "sha", "host_id",
                                                    "host_hostname", "status", "started_at", "file")}
            | {"params_digest": settings_digest(run["variant"], run["params"], run["env"], run["command"]),
               "reused": run["reused_from"] is not None, "file_size": sizes.get(run["file"])}
            for run in sources]
    found = {run["file"] for run in sources}
    rows += [common | {"file": path.name, "file_size": sizes.get(path.name),
                       "status": SHADOWED if held.files.get(path) == [] else DAMAGED}
             for path in [*held.damaged, *held.files] if path.name not in found]
    return pa.Table.from_pylist(rows or [common], schema=INDEX_SCHEMA)  # an empty partition: one row


def _sources(held: Holdings) -> list[dict]:
    """The index source columns of every run ``held`` names, with ``file`` it was read from; a
    damaged file gives none (named in a warning)."""
    runs = []
    for path, keys in held.files.items():
        if is_part(path) and keys:
            table = read_table_skipping([path], _reader(SOURCE_SCHEMA))
            wanted = set(keys)
            runs += [run | {"file": path.name} for run in (table.to_pylist() if table else [])
                     if run["run_key"] in wanted]
    singles = read_table_skipping([path for path in held.files if not is_part(path)], _reader(SOURCE_SCHEMA))
    for run in singles.to_pylist() if singles else []:
        runs.append(run | {"file": f"{run['run_key']}.parquet"})
    return runs


def _reader(schema: pa.Schema) -> Callable[[list[Path]], pa.Table]:
    def read(paths: list[Path]) -> pa.Table:
        return ds.dataset([str(p) for p in paths], format="parquet", schema=schema).to_table()
    return read


def _created(root: str | Path, sweep_id: str) -> str | None:
    """The sweep's creation time from its record; None without a readable record."""
    try:
        created = json.loads(record_path(Path(root), sweep_id).read_text(encoding="utf-8")).get("created")
    except (OSError, ValueError, AttributeError):
        return None
    return created if isinstance(created, str) else None


def write_delta(root: str | Path, rows: pa.Table) -> None:
    """Add ``rows`` (every row of the partitions they name) to the index; fold when deltas pile up."""
    directory = index_dir(root) / "delta"
    name = f"{time.time_ns():020d}-{os.getpid()}-{secrets.token_hex(4)}.parquet"
    write_with(directory / name, lambda tmp: pq.write_table(rows.cast(INDEX_SCHEMA), tmp))
    if len(_deltas(root)) >= FOLD_AT:
        fold(root, wait=False)


def fold(root: str | Path, wait: bool = True) -> bool:
    """Merge the deltas into the base (under the index lock); False when another process holds it
    and ``wait`` is False."""
    index_dir(root).mkdir(parents=True, exist_ok=True)
    lock = FileLock(index_dir(root) / ".lock", timeout=LOCK_TIMEOUT_S if wait else 0)
    try:
        lock.acquire()
    except Timeout:
        return False
    try:
        deltas = _deltas(root)
        merged = _merged(root, deltas)
        present = sweep_partitions(root)
        merged = merged.filter(pc.is_in(merged.column("sweep_id"), pa.array(list(present), pa.string())))
        _write_base(root, merged)
        for path in deltas:
            path.unlink(missing_ok=True)
    finally:
        lock.release()
    return True


def rebuild(root: str | Path) -> pa.Table:
    """Index every partition of the root from its files, replacing the index; returns it."""
    index_dir(root).mkdir(parents=True, exist_ok=True)
    with FileLock(index_dir(root) / ".lock", timeout=LOCK_TIMEOUT_S):
        deltas = _deltas(root)
        tables = [scan_partition(root, sweep_id, stat) for sweep_id, stat in sweep_partitions(root).items()]
        table = pa.concat_tables(tables) if tables else INDEX_SCHEMA.empty_table()
        _write_base(root, table)
        for path in deltas:
            path.unlink(missing_ok=True)
    return table


def _write_base(root: str | Path, table: pa.Table) -> None:
    table = table.sort_by([("sweep_id", "ascending"), ("case", "ascending"), ("side", "ascending")])
    write_with(_base(root), lambda tmp: pq.write_table(table, tmp, row_group_size=65536))


def _merged(root: str | Path, deltas: list[Path]) -> pa.Table:
    """Base and ``deltas``: per partition the rows of its newest write."""
    tables = []
    for path in [_base(root), *deltas]:
        try:
            tables.append(pq.read_table(path, schema=INDEX_SCHEMA))
        except FileNotFoundError:
            continue  # no base yet, or a delta folded meanwhile (the base holds it now)
        except READ_ERRORS:
            continue  # a damaged index file: its partitions are stale and scanned again
    if not tables:
        return INDEX_SCHEMA.empty_table()
    if len(tables) == 1:
        return tables[0]
    table = pa.concat_tables(tables)
    newest = table.group_by("sweep_id").aggregate([("indexed_ns", "max")])
    keep = table.join(newest, keys=["sweep_id"], join_type="inner")
    keep = keep.filter(pc.equal(keep.column("indexed_ns"), keep.column("indexed_ns_max")))
    return keep.drop_columns(["indexed_ns_max"]).select(INDEX_SCHEMA.names)


def known_rows(root: str | Path, sweep_id: str) -> pa.Table:
    """The rows the index holds for one sweep, fresh or not (what it last saw there)."""
    table = _merged(root, _deltas(root))
    return table.filter(pc.equal(table.column("sweep_id"), sweep_id))


def current(root: str | Path, only: Iterable[str] | None = None) -> pa.Table:
    """The index rows of every partition on disk (or of the sweeps in ``only``), up to date: rows
    of partitions whose fingerprint changed, or that were never indexed, come from a scan of their
    files; those of sweeps not running are written back (one warning names them)."""
    present = sweep_partitions(root)
    if only is not None:
        wanted = set(only)
        present = {sweep: stat for sweep, stat in present.items() if sweep in wanted}
    had_index = _base(root).exists() or bool(_deltas(root))
    table = _merged(root, _deltas(root)) if had_index else INDEX_SCHEMA.empty_table()
    fresh = _fresh(root, table, present)
    stale = [sweep for sweep in present if sweep not in fresh]
    if not stale:
        return table.filter(pc.is_in(table.column("sweep_id"), pa.array(sorted(fresh), pa.string())))
    scanned = [scan_partition(root, sweep, present[sweep]) for sweep in stale]
    settled = [rows for sweep, rows in zip(stale, scanned, strict=True) if not _running(root, sweep)]
    if settled:
        _warn_stale(root, had_index, len(settled))
        _save(root, pa.concat_tables(settled))
    kept = table.filter(pc.is_in(table.column("sweep_id"), pa.array(sorted(fresh), pa.string())))
    return pa.concat_tables([kept, *scanned])


def _fresh(root: str | Path, table: pa.Table, present: dict[str, os.stat_result]) -> set[str]:
    """The sweeps of ``present`` whose index rows still describe their partition."""
    if not table.num_rows:
        return set()
    marks = table.group_by("sweep_id").aggregate(
        [("partition_inode", "max"), ("partition_mtime_ns", "max"), ("indexed_ns", "max")]).to_pylist()
    fresh = set()
    for mark in marks:
        stat = present.get(mark["sweep_id"])
        if stat is None or (stat.st_ino, stat.st_mtime_ns) != (mark["partition_inode_max"],
                                                                mark["partition_mtime_ns_max"]):
            continue
        if mark["indexed_ns_max"] - stat.st_mtime_ns >= RACY_NS or _same_files(root, table, mark["sweep_id"]):
            fresh.add(mark["sweep_id"])
    return fresh


def _same_files(root: str | Path, table: pa.Table, sweep_id: str) -> bool:
    """Whether the partition holds exactly the files (names and sizes) its index rows name."""
    rows = table.filter(pc.equal(table.column("sweep_id"), sweep_id)).select(["file", "file_size"])
    indexed = {(f, s) for f, s in zip(*(rows.column(c).to_pylist() for c in ("file", "file_size")),
                                       strict=True) if f is not None}
    held = holdings(root, "runs", sweep_id)
    return indexed == {(path.name, size) for path, size in held.sizes.items()}


def _running(root: str | Path, sweep_id: str) -> bool:
    """Whether the sweep's record says it is being dispatched (its partition still grows)."""
    try:
        record = json.loads(record_path(Path(root), sweep_id).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(record, dict) and record.get("status") == "running"


def _save(root: str | Path, rows: pa.Table) -> None:
    """Write a reader's scan back to the index; a results root it cannot write to keeps it unsaved."""
    try:
        write_delta(root, rows)
    except OSError:
        pass


def _warn_stale(root: str | Path, had_index: bool, count: int) -> None:
    """One line on stderr per root and process: the index was missing or out of date."""
    if str(root) in _warned:
        return
    _warned.add(str(root))
    what = "out of date for" if had_index else "missing; indexing"
    print(f"shasweep: warning: the results index of {root} is {what} {count} sweep(s): read their "
          "files instead and updated the index (`shasweep index --rebuild` rebuilds it whole)",
          file=sys.stderr, flush=True)
