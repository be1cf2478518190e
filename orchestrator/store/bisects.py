"""The bisect record ``<results>/bisect/<bisect_id>.json``: what a ``shasweep bisect`` set out to do
(spec, good and bad SHAs, the first-parent history), every step it took and what it found.

Ids are reserved like sweep ids (``records.reserve_id``); a client running a bisect holds its lock
(``bisect/.<id>.lock``), so a ``--resume`` of a bisect that is still running fails instead of
running it twice.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from orchestrator.errors import InvalidInputError, UnknownSweepError
from orchestrator.spec.results_format import FORMAT_VERSION, RECORD_KEY, checked_version
from orchestrator.store.records import creation_order, reserve_id, stored_sequence, write_json


def bisect_dir(results_root: Path) -> Path:
    return results_root / "bisect"


def bisect_path(results_root: Path, bisect_id: str) -> Path:
    return bisect_dir(results_root) / f"{bisect_id}.json"


def reserve_bisect_id(results_root: Path, name: str, now: datetime) -> str:
    return reserve_id(bisect_dir(results_root), name, now)


def write_bisect(results_root: Path, bisect_id: str, record: dict[str, Any]) -> Path:
    """Write ``record`` atomically, this shasweep's format version first."""
    versioned = {RECORD_KEY: FORMAT_VERSION, **{k: v for k, v in record.items() if k != RECORD_KEY}}
    return write_json(bisect_path(results_root, bisect_id), versioned)


def read_bisect(results_root: Path, bisect_id: str) -> dict[str, Any]:
    """The stored record of ``bisect_id`` (its format version checked and left out);
    ``UnknownSweepError`` (exit 2) naming the file otherwise, ``NewerFormatError`` for a newer one."""
    path = bisect_path(results_root, bisect_id)
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UnknownSweepError(f"no bisect {bisect_id!r} under {bisect_dir(results_root)}") from None
    except (OSError, ValueError) as exc:
        raise UnknownSweepError(f"bisect record {path} is unreadable: {exc}") from None
    if not isinstance(record, dict):
        raise UnknownSweepError(f"bisect record {path} is not a JSON object")
    checked_version(record.pop(RECORD_KEY, None), str(path))  # every version so far reads alike
    return record


def latest_bisect_id(results_root: Path) -> str:
    """The most recently created recorded bisect (``records.creation_order``)."""
    found = [(creation_order(path.stem, stored_sequence(path)), path.stem)
             for path in bisect_dir(results_root).glob("[!.]*.json") if path.stat().st_size > 0]
    if not found:
        raise UnknownSweepError(f"no bisects recorded under {bisect_dir(results_root)}")
    return max(found)[1]


@contextmanager
def bisect_lock(results_root: Path, bisect_id: str) -> Iterator[None]:
    """Hold the bisect's lock while running it; ``InvalidInputError`` if another process holds it."""
    lock = FileLock(bisect_dir(results_root) / f".{bisect_id}.lock", timeout=0)
    try:
        lock.acquire()
    except Timeout:
        raise InvalidInputError(f"bisect {bisect_id!r} is being run by another shasweep process "
                                f"(it holds {lock.lock_file})") from None
    try:
        yield
    finally:
        lock.release()
