"""Damaged results files: found, named once on stderr, and left out of every read.

A Parquet file that cannot be opened (truncated, overwritten, not Parquet at all) must not take the
whole results root down with it: every reader lists files through ``readable_files`` (a footer
check, cheap next to the read itself) and reads them through ``read_table_skipping``, which falls
back to one file at a time when a file's footer was fine but its data was not. Each damaged file is
named in one warning line per process; ``shasweep run --resume`` re-runs a run whose runs or steps
file is damaged, which rewrites both.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

_warned: set[str] = set()

# Reading a damaged file raises one of these (pyarrow's own errors, or OS errors for unreadable files).
READ_ERRORS: tuple[type[BaseException], ...] = (pa.ArrowException, OSError, ValueError)


def warn_damaged(path: Path, reason: object) -> None:
    """One line on stderr naming ``path`` as damaged and skipped (once per path and process)."""
    if str(path) in _warned:
        return
    _warned.add(str(path))
    print(f"shasweep: warning: skipping damaged results file {path}: {_one_line(reason)} "
          "(`shasweep run --resume SWEEP_ID` re-runs its run)", file=sys.stderr, flush=True)


def is_readable(path: Path) -> bool:
    """Whether ``path``'s Parquet footer can be read; warns when it cannot."""
    try:
        pq.read_metadata(path)
    except READ_ERRORS as exc:
        warn_damaged(path, exc)
        return False
    return True


def parquet_files(directory: Path) -> list[Path]:
    """The (non-temporary) Parquet files under ``directory``, recursively, sorted."""
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.rglob("*.parquet") if not p.name.startswith(".") and p.is_file())


def readable_files(paths: Iterable[Path]) -> list[Path]:
    """``paths`` without the damaged ones (each named in a warning)."""
    return [path for path in paths if is_readable(path)]


def read_table_skipping(paths: list[Path], read: Callable[[list[Path]], pa.Table]) -> pa.Table | None:
    """``read(paths)``; if that fails on a damaged file, ``read`` each file alone and concatenate the
    ones that work. ``None`` when nothing is readable."""
    if not paths:
        return None
    try:
        return read(paths)
    except READ_ERRORS:
        pass
    tables = []
    for path in paths:
        try:
            tables.append(read([path]))
        except READ_ERRORS as exc:
            warn_damaged(path, exc)
    if not tables:
        return None
    return pa.concat_tables(tables, promote_options="default")


def read_files(paths: Iterable[Path], schema: pa.Schema | None = None, **to_table: object) -> pa.Table | None:
    """The readable ones of ``paths`` as one table (``to_table``: ``columns``, ``filter``), damaged
    files skipped with a warning; ``None`` when none is readable."""
    def read(files: list[Path]) -> pa.Table:
        return ds.dataset([str(f) for f in files], format="parquet", schema=schema).to_table(**to_table)

    return read_table_skipping(readable_files(paths), read)


def _one_line(reason: object) -> str:
    text = str(reason).strip()
    return text.splitlines()[0] if text else type(reason).__name__
