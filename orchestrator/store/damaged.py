"""Damaged results files: found, named once on stderr, and left out of every read.

A Parquet file that cannot be opened (truncated, overwritten, not Parquet at all) must not take the
whole results root down with it: the read layer (``store.query``) reads files through
``read_table_skipping``, which falls back to one file at a time when a read fails. Each damaged file
is named in one warning line per process; ``shasweep run --resume`` re-runs a run whose runs or
steps file is damaged, which rewrites both.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

_warned: set[str] = set()

# Reading a damaged file raises one of these (pyarrow's own errors, or OS errors for unreadable files).
READ_ERRORS: tuple[type[BaseException], ...] = (pa.ArrowException, OSError, ValueError)


def warn_damaged(path: Path, reason: object) -> None:
    """One line on stderr naming ``path`` as damaged and skipped (once per path and process)."""
    if str(path) in _warned:
        return
    _warned.add(str(path))
    why = _one_line(reason).replace(f" '{path}'", "").replace(str(path), "it")  # the path once per line
    print(f"shasweep: warning: skipping damaged results file {path}: {why} "
          "(`shasweep run --resume SWEEP_ID` re-runs its run)", file=sys.stderr, flush=True)


def is_readable(path: Path) -> bool:
    """Whether ``path``'s Parquet footer can be read; warns when it cannot (FileNotFoundError: gone)."""
    try:
        pq.read_metadata(path)
    except FileNotFoundError:
        raise
    except READ_ERRORS as exc:
        warn_damaged(path, exc)
        return False
    return True


def read_table_skipping(paths: list[Path], read: Callable[[list[Path]], pa.Table]) -> pa.Table | None:
    """``read(paths)``; if that fails on a damaged file, ``read`` each file alone and concatenate the
    ones that work. ``None`` when nothing is readable. A file that is gone raises FileNotFoundError."""
    if not paths:
        return None
    try:
        return read(paths)
    except FileNotFoundError:
        raise  # gone, not damaged: a compaction replaced the partition; the caller lists it again
    except READ_ERRORS:
        pass
    tables = []
    for path in paths:
        try:
            tables.append(read([path]))
        except FileNotFoundError:
            raise
        except READ_ERRORS as exc:
            warn_damaged(path, exc)
    if not tables:
        return None
    return pa.concat_tables(tables, promote_options="permissive")


def _one_line(reason: object) -> str:
    text = str(reason).strip()
    return text.splitlines()[0] if text else type(reason).__name__
