"""Compaction: a finished sweep's per-run files merged into one runs file and one steps file.

``compact_sweep`` rewrites a sweep's two partitions so that every run is in one ``part-<token>``
file per table (``store.partitions``): runs sorted by case, side, SHA and plan order, steps by
phase and then in the runs' order, so a question about one case or one phase reads contiguous
rows. ``release`` keeps some runs in files of their own: ``--resume`` releases the runs it may run
again, so a re-run replaces its own two files as before and the part is never rewritten under it.

Every rewrite goes through a staging directory outside the dataset, ``<root>/.compacting/<id>/``
(the commit), with each table's new partition staged on that table's own file system
(``table_staging``: the same directory, unless ``<root>/runs`` or ``<root>/steps`` is a link to
another file system, when it is ``.compacting/<id>/`` beside the directory the link leads to), so
that it can be exchanged with the live partition:

1. the new partitions are written there in full, read back and fsynced;
2. ``commit.json`` records the new directories' inodes (the commit point: before it, a crash leaves
   the staging directory to be removed; after it, to be finished);
3. the steps partition, then the runs partition, is swapped for its new version (``store.swap``:
   one atomic exchange each, so a reader listing a partition sees all old files or all new ones);
4. the index gets the sweep's new rows (``store.index``), and the staging directory (holding the old
   files) is removed.

A crash at any point leaves every run readable exactly once, by shasweep and by
``pd.read_parquet``; the next ``compact_sweep`` (or ``shasweep compact``) finishes or undoes the
interrupted one first. A compaction an older shasweep committed with its new partitions on the
root's file system while the table lived on another (it failed with EXDEV on every try) is finished
by copying them across first (``_bring_across``). A damaged file is dropped (moved to
``<root>/damaged/``) only when every run it can have held is readable elsewhere, e.g. re-run by
``--resume``; otherwise the sweep is left as it is and the outcome says which file and what to do.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import sys
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from orchestrator.errors import InvalidInputError
from orchestrator.spec.results_format import metadata_version, with_version
from orchestrator.store import index
from orchestrator.store.atomic import copy_tree, fsync_dir, fsync_file, move_file, write_text_atomic
from orchestrator.store.damaged import READ_ERRORS, warn_damaged
from orchestrator.store.parquet import WRITE_OPTIONS, write_table
from orchestrator.store.partitions import (
    KINDS,
    RUN_KEYS_METADATA,
    Holdings,
    holdings,
    is_part,
    part_name,
    part_run_keys,
    partition_dir,
)
from orchestrator.store.records import read_record
from orchestrator.store.swap import inode, put_in_place

STAGING = ".compacting"
DAMAGED_DIR = "damaged"
RUNS_ORDER: tuple[str, ...] = ("case", "side", "sha", "order", "run_key")
# Column statistics (min/max per row group, so a filter skips row groups) only on the columns the
# readers filter on: on all ~80 columns they would be most of each footer, parsed on every read.
FILTERED_COLUMNS: tuple[str, ...] = ("sweep_id", "run_key", "case", "side", "sha", "status", "host_hostname",
                                     "reused_from", "phase", "warmup", "step")
PART_ROW_GROUP = 131072


@dataclass
class Compacted:
    """What ``compact_sweep`` did to one sweep."""

    sweep_id: str
    runs: int = 0  # runs in the sweep's part after it
    files_before: int = 0
    files_after: int = 0
    dropped: list[Path] = field(default_factory=list)  # damaged files moved out: their runs are elsewhere
    blocked: str | None = None  # why nothing was done (a damaged file whose runs exist nowhere else)


def staging_dir(root: str | Path, sweep_id: str) -> Path:
    """The sweep's staging directory under the root: its ``commit.json``."""
    return Path(root) / STAGING / sweep_id


def table_staging(root: str | Path, kind: str, sweep_id: str) -> Path:
    """Where the table ``kind``'s new partition is staged: on the file system of ``<root>/<kind>``, so a
    rename can put it in place. The root's staging directory when the table is on the root's file
    system; else ``.compacting/<id>`` beside the directory ``<root>/<kind>`` leads to, or inside it when
    that directory is a mount point or its parent is not ours to write (nothing else of that file
    system is then outside the table)."""
    root = Path(root)
    real = (root / kind).resolve()
    try:
        device = real.stat().st_dev
        if root.stat().st_dev == device:
            return staging_dir(root, sweep_id)
        beside = real.parent.stat().st_dev == device and os.access(real.parent, os.W_OK | os.X_OK)
    except FileNotFoundError:
        return staging_dir(root, sweep_id)
    return (real.parent if beside else real) / STAGING / sweep_id


def _stagings(root: Path, sweep_id: str) -> list[Path]:
    """Every staging directory of the sweep's compaction: the tables' first, the root's (the commit) last."""
    tables = {table_staging(root, kind, sweep_id) for kind in KINDS} - {staging_dir(root, sweep_id)}
    return [*sorted(tables), staging_dir(root, sweep_id)]


def needs_compaction(root: str | Path, sweep_id: str) -> bool:
    """Whether the sweep has anything to merge: more than one file in a table, a damaged file or an
    interrupted compaction."""
    if staging_dir(root, sweep_id).exists():
        return True
    held = [holdings(root, kind, sweep_id) for kind in KINDS]
    return any(h.damaged or len(h.files) > 1 or any(not is_part(p) for p in h.files) for h in held)


def compact_sweep(root: str | Path, sweep_id: str, release: Collection[str] = ()) -> Compacted:
    """Merge the sweep's runs into one part per table, keeping the runs in ``release`` in files of
    their own. The caller holds the sweep's lock (``store.records.sweep_lock``): nothing else writes
    the sweep meanwhile."""
    root = Path(root)
    recover(root, sweep_id)
    held = {kind: holdings(root, kind, sweep_id) for kind in KINDS}
    outcome = Compacted(sweep_id, files_before=sum(len(h.files) + len(h.damaged) for h in held.values()))
    tables, unreadable = _read_all(held)
    runs = tables["runs"]
    readable = {kind: _keys_held(held[kind], unreadable[kind]) for kind in KINDS}
    lost = [path for kind in KINDS for path in unreadable[kind]]
    known = _known_keys(root, sweep_id, lost)
    missing = {path: sorted(keys - (readable["runs"] & readable["steps"])) for path, keys in known.items()}
    blocking = {path: keys for path, keys in missing.items() if keys or not known[path]}
    if blocking:
        path, keys = next(iter(blocking.items()))
        why = (f"{len(keys)} of its runs are readable nowhere else" if keys
               else "the runs it held are unknown")
        outcome.blocked = (f"{path} is damaged and {why}: `shasweep run --resume {sweep_id}` runs them "
                           f"again, then `shasweep compact {sweep_id}` drops it")
        return outcome
    if not lost and not _worth_rewriting(held, release):
        outcome.files_after, outcome.runs = outcome.files_before, runs.num_rows
        return outcome
    singles = set(runs.column("run_key").to_pylist()) & set(release)
    _rewrite(root, sweep_id, runs, tables["steps"], singles, lost)
    outcome.runs = runs.num_rows - len(singles)
    outcome.files_after = sum(len(holdings(root, kind, sweep_id).files) for kind in KINDS)
    outcome.dropped = lost
    return outcome


def write_compacted(root: str | Path, sweep_id: str, runs: pa.Table, steps: pa.Table) -> None:
    """Write rows already at hand (``store.parquet``'s run and steps tables of every run of the sweep)
    as the sweep's compacted partitions, by the path compaction takes. The caller holds the sweep's
    lock."""
    _rewrite(Path(root), sweep_id, runs, steps, set(), [])


def _rewrite(root: Path, sweep_id: str, runs: pa.Table, steps: pa.Table, singles: set[str],
             dropped: list[Path]) -> None:
    """Steps 1 to 4 of the module docstring: stage, commit, swap in, index and clean up."""
    token = secrets.token_hex(8)
    _stage(root, sweep_id, token, runs, steps, singles)
    commit = {"token": token, "inodes": {kind: inode(_new_dir(root, kind, sweep_id)) for kind in KINDS},
              "damaged": [str(path) for path in dropped]}
    write_text_atomic(staging_dir(root, sweep_id) / "commit.json", json.dumps(commit))
    _finish(root, sweep_id, commit)


def _new_dir(root: Path, kind: str, sweep_id: str) -> Path:
    return table_staging(root, kind, sweep_id) / f"new-{kind}"


def compact_finished(root: str | Path, sweep_id: str) -> None:
    """The last step of ``shasweep run``: compact the sweep just dispatched (its lock held). A
    failure is a warning, never the run's: the per-run files stay and ``shasweep compact`` retries."""
    _compact_or_warn(root, sweep_id, ())


def release_for_rerun(root: str | Path, sweep_id: str, run_keys: Collection[str]) -> None:
    """Before runs of a compacted sweep are run again (its lock held): move ``run_keys`` out of its
    parts into files of their own, so each re-run replaces just its own two files and a plain
    ``pd.read_parquet`` never sees a run twice. Nothing to do when none of them is in a part; a
    failure is a warning (shasweep's readers prefer a run's own file to a part's row anyway)."""
    wanted = set(run_keys)
    held = holdings(root, "runs", sweep_id)
    if any(wanted.intersection(keys) for path, keys in held.files.items() if is_part(path)):
        _compact_or_warn(root, sweep_id, wanted)


def _compact_or_warn(root: str | Path, sweep_id: str, release: Collection[str]) -> None:
    try:
        outcome = compact_sweep(root, sweep_id, release)
    except (OSError, *READ_ERRORS) as exc:
        why = f"compaction failed ({type(exc).__name__}: {exc})"
        outcome = Compacted(sweep_id, blocked=f"{why}; the files are kept as they were and "
                                              f"`shasweep compact {sweep_id}` retries")
    if outcome.blocked:
        print(f"shasweep: warning: sweep {sweep_id} not compacted: {outcome.blocked}", file=sys.stderr,
              flush=True)


def recover(root: str | Path, sweep_id: str) -> None:
    """Finish a compaction of the sweep that passed its commit point, or remove one that did not."""
    root = Path(root)
    staging = staging_dir(root, sweep_id)
    if not staging.exists():
        return
    try:
        commit = json.loads((staging / "commit.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        for directory in _stagings(root, sweep_id):  # before its commit point: the live ones are untouched
            shutil.rmtree(directory, ignore_errors=True)
        return
    _finish(root, sweep_id, commit)


def _finish(root: Path, sweep_id: str, commit: dict) -> None:
    """Swap the staged partitions in (steps first), move dropped damaged files out of the way,
    index the sweep and remove the staging directories. Repeatable after a crash at any point."""
    for kind in ("steps", "runs"):
        new, live = _new_dir(root, kind, sweep_id), partition_dir(root, kind, sweep_id)
        commit = _bring_across(root, sweep_id, kind, commit)
        put_in_place(new, live, new.with_name(f"old-{kind}"), commit["inodes"][kind])
    for name in commit["damaged"]:
        _keep_damaged(root, sweep_id, Path(name))
    if partition_dir(root, "runs", sweep_id).exists():
        index.write_delta(root, index.scan_partition(root, sweep_id))
    for directory in _stagings(root, sweep_id):
        if directory.exists():
            shutil.rmtree(directory)
            fsync_dir(directory.parent)


def _bring_across(root: Path, sweep_id: str, kind: str, commit: dict) -> dict:
    """Where a committed new partition of ``kind`` waits on the root's file system though the table
    lives on another (staged by a shasweep that failed there with EXDEV): copy it beside the table,
    fsynced, and commit the copy instead. Repeatable: until the commit names the copy, a crash
    leaves the original to copy again. Returns the commit in force."""
    legacy, new = staging_dir(root, sweep_id) / f"new-{kind}", _new_dir(root, kind, sweep_id)
    if legacy == new or inode(legacy) != commit["inodes"][kind]:
        return commit
    if _same_file_system(legacy, partition_dir(root, kind, sweep_id)):
        return commit
    new.parent.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(new, ignore_errors=True)  # a copy a crash cut short
    copy_tree(legacy, new)
    commit = commit | {"inodes": commit["inodes"] | {kind: inode(new)}}
    write_text_atomic(staging_dir(root, sweep_id) / "commit.json", json.dumps(commit))
    shutil.rmtree(legacy)
    return commit


def _same_file_system(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` (where it is missing: its parent) lie on one file system."""
    there = b if b.exists() else b.parent
    try:
        return a.stat().st_dev == there.stat().st_dev
    except FileNotFoundError:
        return True


def _keep_damaged(root: Path, sweep_id: str, path: Path) -> None:
    """Move a dropped damaged file from the swapped-out partition to ``<root>/damaged/`` (copied when
    that is on another file system)."""
    kind = path.parent.parent.name
    staging = table_staging(root, kind, sweep_id)
    for old in (staging / f"new-{kind}", staging / f"old-{kind}"):  # where the old partition went
        if (old / path.name).exists():
            target = root / DAMAGED_DIR / kind / f"sweep={sweep_id}"
            target.mkdir(parents=True, exist_ok=True)
            move_file(old / path.name, target / path.name)


def _read_all(held: dict[str, Holdings]) -> tuple[dict[str, pa.Table], dict[str, list[Path]]]:
    """Every readable row of both tables (shadowed part rows left out) and the unreadable files."""
    tables, unreadable = {}, {}
    for kind, files in held.items():
        parts, bad = [], list(files.damaged)
        for path, keys in files.selection().items():
            try:
                table = pq.read_table(path)
            except FileNotFoundError:
                raise
            except READ_ERRORS as exc:
                warn_damaged(path, exc)
                bad.append(path)
                continue
            metadata_version(table.schema.metadata, str(path))  # never rewrite a newer file as ours
            if keys is not None:
                table = table.filter(pc.is_in(table.column("run_key"), pa.array(keys, pa.string())))
            parts.append(table.replace_schema_metadata(None))
        unreadable[kind] = bad
        tables[kind] = pa.concat_tables(parts, promote_options="permissive") if parts else _empty(kind)
    return tables, unreadable


def _empty(kind: str) -> pa.Table:
    return pa.schema([("run_key", pa.string())] if kind == "runs" else [
        ("sweep_id", pa.string()), ("run_key", pa.string()), ("step", pa.int64()), ("warmup", pa.bool_()),
        ("phase", pa.string()), ("ms", pa.float64())]).empty_table()


def _keys_held(held: Holdings, unreadable: list[Path]) -> set[str]:
    """The run keys whose rows a readable file of ``held`` holds."""
    return {key for path, keys in held.files.items() if path not in unreadable for key in keys}


def _known_keys(root: Path, sweep_id: str, lost: list[Path]) -> dict[Path, set[str]]:
    """For each unreadable file, the run keys it can have held: a single run's own key; a part's
    from its twin in the other table and the index, else every run the sweep record names."""
    known = {}
    for path in lost:
        if not is_part(path):
            known[path] = {path.stem}
            continue
        other = "steps" if path.parent.parent.name == "runs" else "runs"
        twin = partition_dir(root, other, sweep_id) / path.name
        keys = set(part_run_keys(twin) or []) if twin.exists() else set()
        known[path] = (keys | _indexed_keys(root, sweep_id, path.name)) or _recorded_keys(root, sweep_id)
    return known


def _indexed_keys(root: Path, sweep_id: str, name: str) -> set[str]:
    rows = index.known_rows(root, sweep_id)
    return {key for key, file in zip(*(rows.column(c).to_pylist() for c in ("run_key", "file")), strict=True)
            if file == name and key is not None}


def _recorded_keys(root: Path, sweep_id: str) -> set[str]:
    """Every run key the sweep record's outcomes name (empty without a readable record)."""
    try:
        return {outcome.run_key for outcome in read_record(root, sweep_id).outcomes}
    except (InvalidInputError, OSError):
        return set()


def _worth_rewriting(held: dict[str, Holdings], release: Collection[str]) -> bool:
    """Whether the layout differs from the wanted one: one part per table, ``release`` on their own."""
    wanted = set(release)
    for files in held.values():
        parts = [path for path in files.files if is_part(path)]
        singles = {path.stem for path in files.files if not is_part(path)}
        in_parts = {key for path in parts for key in files.files[path]}
        if len(parts) > 1 or files.partial or singles - wanted or in_parts & wanted:
            return True
    return False


def _stage(root: Path, sweep_id: str, token: str, runs: pa.Table, steps: pa.Table, singles: set[str]) -> None:
    """Write the new partitions under the staging directories, read them back, fsync them. The root's
    staging directory is made first, so a crash never leaves a table's without it."""
    stagings = _stagings(root, sweep_id)
    for directory in stagings:
        shutil.rmtree(directory, ignore_errors=True)
    stagings[-1].mkdir(parents=True)
    new = {kind: _new_dir(root, kind, sweep_id) for kind in KINDS}
    for directory in new.values():
        directory.mkdir(parents=True)
    runs = runs.sort_by([(name, "ascending") for name in RUNS_ORDER if name in runs.column_names])
    order = {key: rank for rank, key in enumerate(runs.column("run_key").to_pylist())}
    steps = steps.filter(pc.is_in(steps.column("run_key"), pa.array(list(order), pa.string())))
    rank = pa.array([order[key] for key in steps.column("run_key").to_pylist()], pa.int64())
    steps = steps.append_column("_rank", rank).sort_by(
        [("phase", "ascending"), ("_rank", "ascending"), ("step", "ascending")]).drop_columns(["_rank"])
    merged = [key for key in order if key not in singles]
    if merged:
        keep = pa.array(merged, pa.string())
        for kind, table in (("runs", runs), ("steps", steps)):
            _write_part(new[kind] / part_name(token), table.filter(pc.is_in(table.column("run_key"), keep)),
                        merged)
    for key in order:
        if key in singles:
            for kind, table in (("runs", runs), ("steps", steps)):
                one = table.filter(pc.equal(table.column("run_key"), key))
                write_table(one, new[kind] / f"{key}.parquet", WRITE_OPTIONS)
    _verify(new, len(order), steps.num_rows)
    for directory in new.values():
        for path in directory.iterdir():
            fsync_file(path)
        fsync_dir(directory)
        fsync_dir(directory.parent)


def _write_part(path: Path, table: pa.Table, keys: list[str]) -> None:
    """One compacted file: ``table`` with the keys it holds in its footer (``RUN_KEYS_METADATA``)."""
    statistics = [name for name in table.column_names if name in FILTERED_COLUMNS]
    with pq.ParquetWriter(path, table.schema, write_statistics=statistics, store_schema=False) as writer:
        writer.write_table(table, row_group_size=PART_ROW_GROUP)
        writer.add_key_value_metadata(with_version({RUN_KEYS_METADATA: json.dumps(keys).encode()}))


def _verify(new: dict[str, Path], runs: int, steps: int) -> None:
    """Read every staged file back in full: the rows must all be there before anything is swapped."""
    counted = {kind: sum(pq.read_table(path).num_rows for path in directory.iterdir())
               for kind, directory in new.items()}
    if counted != {"runs": runs, "steps": steps}:
        raise OSError(f"the compacted files read back {counted}, not {runs} runs and {steps} steps rows")
