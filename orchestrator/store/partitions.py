"""The file layout of a results root's two tables, and which file holds which run.

``<root>/<kind>/sweep=<id>/`` (``kind`` runs or steps) holds a sweep's rows in two kinds of file:

* ``<run_key>.parquet``: one run, as the worker wrote it (``store.parquet.write_run``);
* ``part-<token>.parquet``: many runs merged by ``store.compact``; the footer's key-value metadata
  ``shasweep.run_keys`` lists every run it holds (a run without steps too), and the runs and steps
  parts of one compaction share the token.

A run's rows are in exactly one file per table, except after a run of a compacted sweep was written
again (a worker that outlived its client): then its own file wins over the part's rows. Only this
module and ``store.compact`` know the names; readers go through ``store.query``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from orchestrator.spec.results_format import metadata_version
from orchestrator.store.damaged import READ_ERRORS, warn_damaged

KINDS: tuple[str, ...] = ("runs", "steps")
PART_PREFIX = "part-"
RUN_KEYS_METADATA = b"shasweep.run_keys"
SWEEP_PREFIX = "sweep="
T = TypeVar("T")


ATTEMPTS = 3  # a read that found a file gone (a compaction replaced its partition) lists again


def retrying(read: Callable[[], T], again: Callable[[], None] | None = None) -> T:
    """``read()``; when a file it listed vanished (FileNotFoundError: a compaction or an index fold
    replaced it), ``again()`` (e.g. list again) and retry, ``ATTEMPTS`` times in all."""
    for attempt in range(ATTEMPTS):
        try:
            return read()
        except FileNotFoundError:
            if attempt == ATTEMPTS - 1:
                raise
            if again is not None:
                again()
    raise AssertionError("unreachable")


def partition_dir(root: str | Path, kind: str, sweep_id: str) -> Path:
    return Path(root) / kind / f"{SWEEP_PREFIX}{sweep_id}"


def is_part(path: Path) -> bool:
    """Whether ``path`` is a compacted file (else it holds one run, named by its key)."""
    return path.name.startswith(PART_PREFIX)


def part_name(token: str) -> str:
    return f"{PART_PREFIX}{token}.parquet"


def sweep_partitions(root: str | Path) -> dict[str, os.stat_result]:
    """Every sweep with a runs partition: sweep id -> the partition directory's stat (one directory
    read and one stat per sweep, no data file opened)."""
    found = {}
    try:
        entries = list(os.scandir(Path(root) / "runs"))
    except (FileNotFoundError, NotADirectoryError):
        return {}
    for entry in entries:
        if entry.name.startswith(SWEEP_PREFIX) and entry.is_dir():
            try:
                found[entry.name.removeprefix(SWEEP_PREFIX)] = entry.stat()
            except FileNotFoundError:  # compacted or removed meanwhile
                continue
    return found


def data_files(directory: Path) -> list[os.DirEntry]:
    """The Parquet files directly in ``directory`` (temporary dot files and others left out), sorted."""
    try:
        entries = [e for e in os.scandir(directory)
                   if e.name.endswith(".parquet") and not e.name.startswith((".", "_")) and e.is_file()]
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted(entries, key=lambda e: e.name)


def part_run_keys(path: Path) -> list[str] | None:
    """The run keys a compacted file's footer lists; None (warned) when the footer is damaged;
    ``NewerFormatError`` when the file is of a newer format version."""
    try:
        metadata = pq.read_metadata(path).metadata or {}
        metadata_version(metadata, str(path))
        keys = json.loads(metadata[RUN_KEYS_METADATA])
    except FileNotFoundError:
        raise
    except (*READ_ERRORS, KeyError) as exc:
        warn_damaged(path, exc)
        return None
    return [str(key) for key in keys]


def versioned_dataset(paths: list[Path], schema: pa.Schema) -> ds.Dataset:
    """The dataset of ``paths`` read as ``schema``, each file's format version checked from its
    footer (which the read then reuses): ``NewerFormatError`` naming a file of a newer version."""
    dataset = ds.dataset([str(path) for path in paths], format="parquet", schema=schema)
    for fragment in dataset.get_fragments():
        metadata_version(fragment.physical_schema.metadata, fragment.path)
    return dataset


@dataclass
class Holdings:
    """Which file of one partition holds which run: ``files`` maps a readable file to the run keys
    to read from it; ``partial`` are the parts some of whose keys are left to the run's own file;
    ``damaged`` the files whose footer cannot be read (each already named in a warning)."""

    sweep_id: str
    kind: str
    files: dict[Path, list[str]] = field(default_factory=dict)
    partial: set[Path] = field(default_factory=set)
    damaged: list[Path] = field(default_factory=list)
    sizes: dict[Path, int] = field(default_factory=dict)

    def selection(self) -> dict[Path, list[str] | None]:
        """Each readable file with the keys to read from it; None where that is every row."""
        return {path: keys if path in self.partial else None for path, keys in self.files.items()}


def holdings(root: str | Path, kind: str, sweep_id: str) -> Holdings:
    """Who holds what in ``<root>/<kind>/sweep=<sweep_id>/``: parts' keys from their footers, single
    runs from their names. Raises FileNotFoundError when a file vanished while it was listed (a
    compaction replaced the partition): the caller lists again."""
    found = Holdings(sweep_id, kind)
    singles, parts = [], []
    for entry in data_files(partition_dir(root, kind, sweep_id)):
        path = Path(entry.path)
        found.sizes[path] = entry.stat().st_size
        (parts if is_part(path) else singles).append(path)
    own = {path.stem for path in singles}
    for path in parts:
        keys = part_run_keys(path)
        if keys is None:
            found.damaged.append(path)
            continue
        found.files[path] = [key for key in keys if key not in own]
        if len(found.files[path]) < len(keys):
            found.partial.add(path)
    for path in singles:
        found.files[path] = [path.stem]
    return found
