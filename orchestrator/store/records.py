"""The sweep record ``<results>/sweeps/<sweep_id>.json``: the validated spec, resolved SHAs, host, status.

Sweep ids are ``<name>-<UTC yyyymmddTHHMMSS>``, with ``-2``, ``-3``... appended when that id is
taken; an id is reserved by creating its record exclusively, so two clients never share one. A
client dispatching a sweep holds its lock (``sweeps/.<id>.lock``), so a ``--resume`` of a sweep that
is still running fails instead of running it twice; the OS releases the lock if the client dies.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from orchestrator.errors import InvalidInputError, UnknownSweepError

OUTCOME_KEYS: tuple[str, ...] = ("run_key", "order", "side", "case", "repeat", "host_id", "status", "error")

_ID_TIME = re.compile(r"-(\d{8}T\d{6})(?:-(\d+))?\Z")


def sweeps_dir(results_root: Path) -> Path:
    return results_root / "sweeps"


def record_path(results_root: Path, sweep_id: str) -> Path:
    return sweeps_dir(results_root) / f"{sweep_id}.json"


def base_sweep_id(name: str, now: datetime) -> str:
    """``<name>-<UTC yyyymmddTHHMMSS>`` for a sweep started at ``now``."""
    return f"{name}-{now.astimezone(UTC):%Y%m%dT%H%M%S}"


def reserve_sweep_id(results_root: Path, name: str, now: datetime) -> str:
    """Claim a fresh sweep id by creating its (empty) record exclusively; return the id."""
    sweeps_dir(results_root).mkdir(parents=True, exist_ok=True)
    base = base_sweep_id(name, now)
    for n in range(1, 10_000):
        sweep_id = base if n == 1 else f"{base}-{n}"
        try:
            with open(record_path(results_root, sweep_id), "x", encoding="utf-8"):
                return sweep_id
        except FileExistsError:
            continue
    raise InvalidInputError(f"no free sweep id for {base!r} under {sweeps_dir(results_root)}")


def lock_path(results_root: Path, sweep_id: str) -> Path:
    return sweeps_dir(results_root) / f".{sweep_id}.lock"


@contextmanager
def sweep_lock(results_root: Path, sweep_id: str) -> Iterator[None]:
    """Hold the sweep's lock while dispatching it; ``InvalidInputError`` if another process holds it."""
    lock = FileLock(lock_path(results_root, sweep_id), timeout=0)
    try:
        lock.acquire()
    except Timeout:
        raise InvalidInputError(f"sweep {sweep_id!r} is being run by another shasweep process "
                                f"(it holds {lock.lock_file})") from None
    try:
        yield
    finally:
        lock.release()


def discard(results_root: Path, sweep_id: str) -> None:
    """Remove the record and lock of a sweep that was reserved but never dispatched."""
    record_path(results_root, sweep_id).unlink(missing_ok=True)
    lock_path(results_root, sweep_id).unlink(missing_ok=True)


def write_record(results_root: Path, sweep_id: str, record: dict[str, Any]) -> Path:
    """Write the record atomically (temporary file, then rename)."""
    path = record_path(results_root, sweep_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{sweep_id}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(record, out, indent=2, default=str)  # key order kept: sides in declaration order
            out.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def read_record(results_root: Path, sweep_id: str) -> dict[str, Any]:
    """The stored record of ``sweep_id``; ``UnknownSweepError`` if there is none."""
    path = record_path(results_root, sweep_id)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UnknownSweepError(f"no sweep {sweep_id!r} under {sweeps_dir(results_root)}") from None
    if not text.strip():
        raise UnknownSweepError(f"sweep {sweep_id!r} was reserved but never recorded ({path})")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise UnknownSweepError(f"sweep record {path} is not valid JSON: {exc}") from None


def latest_sweep_id(results_root: Path) -> str:
    """The newest sweep by the UTC time (and ``-n`` suffix) in its id."""
    candidates = []
    for path in sweeps_dir(results_root).glob("*.json"):
        match = _ID_TIME.search(path.stem)
        if match and path.stat().st_size > 0:
            candidates.append((match.group(1), int(match.group(2) or 1), path.stem))
    if not candidates:
        raise UnknownSweepError(f"no sweeps recorded under {sweeps_dir(results_root)}")
    return max(candidates)[2]


def resolve_sweep_id(results_root: Path, sweep_id: str) -> str:
    """``latest`` -> the newest sweep id; any other id is returned as given."""
    return latest_sweep_id(results_root) if sweep_id == "latest" else sweep_id
