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
sweep is still running, named in one warning and indexed anew. An index file that is not a
regular file (a FIFO, a link: pyarrow calls it missing) is named in one warning and left out, as a
damaged one is; ``rebuild`` removes it.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from stat import S_ISREG

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from filelock import FileLock, Timeout

from orchestrator.spec.results_format import metadata_version, with_version
from orchestrator.store.atomic import write_with
from orchestrator.store.damaged import READ_ERRORS, read_table_skipping
from orchestrator.store.migrations import stored_passes_variant
from orchestrator.store.partitions import (
    Holdings,
    data_files,
    holdings,
    is_part,
    partition_dir,
    retrying,
    sweep_partitions,
    versioned_dataset,
)
from orchestrator.store.records import client_alive, record_summary

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
    """The delta files, oldest first (what is not a regular file left out, named in a warning)."""
    return [path for path in _delta_entries(root) if _regular(path)]


def _delta_entries(root: str | Path) -> list[Path]:
    directory = index_dir(root) / "delta"
    try:
        return sorted(p for p in directory.iterdir() if p.suffix == ".parquet" and not p.name.startswith("."))
    except FileNotFoundError:
        return []


def _regular(path: Path) -> bool:
    """Whether ``path`` is a regular file; anything else there is named once on stderr (the index is a
    cache: ``shasweep index --rebuild`` removes it). False when nothing is there."""
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return False
    if S_ISREG(mode):
        return True
    if str(path) not in _warned:
        _warned.add(str(path))
        print(f"shasweep: warning: skipping {path} of the results index: not a regular file "
              "(`shasweep index --rebuild` removes it)", file=sys.stderr, flush=True)
    return False


def settings_digest(variant: object, params: object, env: object, command: object) -> str:
    """16 hex digits identifying a run's settings: variant (where its command passes one), params,
    env, bench command (as stored)."""
    variant = variant if stored_passes_variant(command) else None
    text = "\0".join("" if value is None else str(value) for value in (variant, params, env, command))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def scan_partition(root: str | Path, sweep_id: str, stat: os.stat_result | None = None) -> pa.Table:
    """The index rows of one sweep, read from its files (the fingerprint taken before listing them,
    so a change during the scan makes them stale, never wrongly fresh)."""
    directory = partition_dir(root, "runs", sweep_id)
    stats = [stat or directory.stat()]

    def read() -> tuple[Holdings, list[dict]]:
        held = holdings(root, "runs", sweep_id)
        return held, _sources(held)

    # replaced while it was read: the new one, with its own fingerprint, is read again
    held, sources = retrying(read, lambda: stats.append(directory.stat()))
    stat = stats[-1]
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
        return versioned_dataset(paths, schema).to_table()
    return read


def _created(root: str | Path, sweep_id: str) -> str | None:
    """The sweep's creation time from its record; None without a readable record."""
    try:
        return record_summary(Path(root), sweep_id)[0]
    except OSError:
        return None


def write_delta(root: str | Path, rows: pa.Table) -> None:
    """Add ``rows`` (every row of the partitions they name) to the index; fold when deltas pile up."""
    directory = index_dir(root) / "delta"
    name = f"{time.time_ns():020d}-{os.getpid()}-{secrets.token_hex(4)}.parquet"
    write_with(directory / name, lambda tmp: pq.write_table(_versioned(rows.cast(INDEX_SCHEMA)), tmp))
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
        stored = _Stored.load(root)
        present = set(sweep_partitions(root))
        _write_base(root, stored.rows(set(stored.marks) & present))
        for path in stored.sources[1:] if stored.has_base else stored.sources:
            path.unlink(missing_ok=True)
    finally:
        lock.release()
    return True


def rebuild(root: str | Path) -> pa.Table:
    """Index every partition of the root from its files, replacing the index; returns it."""
    index_dir(root).mkdir(parents=True, exist_ok=True)
    with FileLock(index_dir(root) / ".lock", timeout=LOCK_TIMEOUT_S):
        deltas = _delta_entries(root)  # whatever is there, regular or not
        tables = [scan_partition(root, sweep_id, stat) for sweep_id, stat in sweep_partitions(root).items()]
        table = pa.concat_tables(tables) if tables else INDEX_SCHEMA.empty_table()
        _write_base(root, table)
        for path in deltas:
            path.unlink(missing_ok=True)
    return table


def _write_base(root: str | Path, table: pa.Table) -> None:
    table = table.sort_by([("case", "ascending"), ("sweep_id", "ascending"), ("side", "ascending")])
    write_with(_base(root), lambda tmp: pq.write_table(_versioned(table), tmp, row_group_size=16384))


def _versioned(table: pa.Table) -> pa.Table:
    """``table`` with this shasweep's format version in its footer."""
    return table.replace_schema_metadata(with_version(table.schema.metadata))


_MARK_COLUMNS = ["sweep_id", "partition_inode", "partition_mtime_ns", "indexed_ns"]


@dataclass
class _Stored:
    """The index files (base first, then deltas) and, per partition, the fingerprint of its newest
    write and which file holds it (read as four columns: rows are read later, filtered)."""

    root: Path
    sources: list[Path]
    has_base: bool
    marks: dict[str, dict]  # sweep id -> partition_inode, partition_mtime_ns, indexed_ns, source

    @classmethod
    def load(cls, root: str | Path) -> _Stored:
        def read() -> _Stored:
            base, deltas = _base(root), _deltas(root)
            has_base = _regular(base)
            sources = [base, *deltas] if has_base else deltas
            return cls(Path(root), sources, has_base, _marks(sources))

        return retrying(read)  # a delta folded meanwhile: list again

    def rows(self, sweeps: set[str], where: pc.Expression | None = None,
             columns: list[str] | None = None) -> pa.Table:
        """The stored rows of ``sweeps`` (from each one's newest write) matching ``where``."""
        by_source: dict[int, list[str]] = {}
        for sweep in sweeps:
            by_source.setdefault(self.marks[sweep]["source"], []).append(sweep)
        tables = []
        for source, owned in sorted(by_source.items()):
            condition = pc.field("sweep_id").isin(owned)
            condition = condition if where is None else condition & where
            tables.append(pq.read_table(self.sources[source], schema=INDEX_SCHEMA, columns=columns,
                                        filters=condition))
        schema = INDEX_SCHEMA if columns is None else pa.schema([INDEX_SCHEMA.field(c) for c in columns])
        return pa.concat_tables(tables) if tables else schema.empty_table()


def _marks(sources: list[Path]) -> dict[str, dict]:
    """Per sweep, the fingerprint columns of its newest write among ``sources`` and its position."""
    marks: dict[str, dict] = {}
    for position, path in enumerate(sources):
        try:
            metadata_version(pq.read_schema(path).metadata, str(path))  # refused when newer
            table = pq.read_table(path, columns=_MARK_COLUMNS, schema=INDEX_SCHEMA)
        except FileNotFoundError:
            raise
        except READ_ERRORS:
            continue  # a damaged index file: its partitions look unindexed and are scanned again
        newest = table.group_by("sweep_id").aggregate([(c, "max") for c in _MARK_COLUMNS[1:]])
        for row in newest.to_pylist():
            mark = {c: row[f"{c}_max"] for c in _MARK_COLUMNS[1:]} | {"source": position}
            earlier = marks.get(row["sweep_id"])
            if earlier is None or (mark["indexed_ns"], position) > (earlier["indexed_ns"], earlier["source"]):
                marks[row["sweep_id"]] = mark
    return marks


def known_rows(root: str | Path, sweep_id: str) -> pa.Table:
    """The rows the index holds for one sweep, fresh or not (what it last saw there)."""
    stored = _Stored.load(root)
    return stored.rows({sweep_id} & set(stored.marks))


def current(root: str | Path, only: Iterable[str] | None = None, where: pc.Expression | None = None,
            columns: list[str] | None = None) -> pa.Table:
    """``_current``, again when a fold removed an index file while it was read."""
    return retrying(lambda: _current(root, only, where, columns))


def _current(root: str | Path, only: Iterable[str] | None, where: pc.Expression | None,
             columns: list[str] | None) -> pa.Table:
    """The index rows matching ``where`` (``columns`` of them) of every partition on disk, or of the
    sweeps in ``only``, up to date: rows of partitions whose fingerprint changed, or that were never
    indexed, come from a scan of their files; those of sweeps not running are written back (one
    warning counts those that had ended: a sweep whose client was killed never indexed itself, so its
    rows are written without one), and so are the rows of racy partitions found unchanged once they are no
    longer racy. Only the fingerprint columns of the whole index are read; rows come filtered."""
    now = time.time_ns()  # before any listing: what is confirmed was so at least since then
    present = sweep_partitions(root)
    if only is not None:
        wanted = set(only)
        present = {sweep: stat for sweep, stat in present.items() if sweep in wanted}
    stored = _Stored.load(root)
    fresh, settled = _fresh(root, stored, present, now)
    stale = [sweep for sweep in present if sweep not in fresh]
    scanned = [scan_partition(root, sweep, present[sweep]) for sweep in stale]
    states = [_dispatch_state(root, sweep) for sweep in stale]
    written = [rows for rows, state in zip(scanned, states, strict=True) if state != RUNNING]
    unexpected = sum(state == ENDED for state in states)  # a killed client never indexed its sweep
    if unexpected:
        _warn_stale(root, bool(stored.sources), unexpected)
    if settled:
        rows = stored.rows(settled)
        written.append(rows.set_column(rows.schema.get_field_index("indexed_ns"), "indexed_ns",
                                       pa.array([now] * rows.num_rows, pa.int64())))
    if written:
        _save(root, pa.concat_tables(written))
    kept = stored.rows(fresh, where, columns)
    found = [table if where is None else table.filter(where) for table in scanned]
    found = [table if columns is None else table.select(columns) for table in found]
    return pa.concat_tables([kept, *found]) if found else kept


def _fresh(root: str | Path, stored: _Stored, present: dict[str, os.stat_result], now: int
           ) -> tuple[set[str], set[str]]:
    """The sweeps of ``present`` whose index rows still describe their partition, and those of them
    that were racy, are unchanged and no longer racy at ``now`` (to be indexed as of ``now``)."""
    fresh, settled = set(), set()
    for sweep_id, stat in present.items():
        mark = stored.marks.get(sweep_id)
        if mark is None or (stat.st_ino, stat.st_mtime_ns) != (mark["partition_inode"],
                                                                mark["partition_mtime_ns"]):
            continue
        if mark["indexed_ns"] - stat.st_mtime_ns >= RACY_NS:
            fresh.add(sweep_id)
        elif _same_files(root, stored, sweep_id):
            fresh.add(sweep_id)
            if now - stat.st_mtime_ns >= RACY_NS:
                settled.add(sweep_id)
    return fresh, settled


def _same_files(root: str | Path, stored: _Stored, sweep_id: str) -> bool:
    """Whether the partition holds exactly the files (names and sizes) its index rows name (one
    directory listing, no data file opened)."""
    rows = stored.rows({sweep_id}, columns=["file", "file_size"])
    indexed = {(f, s) for f, s in zip(*(rows.column(c).to_pylist() for c in ("file", "file_size")),
                                       strict=True) if f is not None}
    listed = data_files(partition_dir(root, "runs", sweep_id))
    return indexed == {(entry.name, entry.stat().st_size) for entry in listed}


RUNNING, CLIENT_GONE, ENDED = "running", "client gone", "ended"


def _dispatch_state(root: str | Path, sweep_id: str) -> str:
    """``RUNNING`` while its client dispatches it (its partition still grows: not written to the
    index), ``CLIENT_GONE`` when its record says running but no client holds the sweep's lock (killed
    before it could compact and index it), else ``ENDED``."""
    try:
        if record_summary(Path(root), sweep_id)[1] != "running":
            return ENDED
        return RUNNING if client_alive(Path(root), sweep_id) else CLIENT_GONE
    except OSError:
        return ENDED


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
