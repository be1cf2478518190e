"""The sweep record file ``<results>/sweeps/<sweep_id>.json`` (its shape: ``spec.record.SweepRecord``).

Sweep ids are ``<name>-<UTC yyyymmddTHHMMSS>``, with ``-2``, ``-3``... appended when that id is
taken; an id is reserved by creating its record exclusively, so two clients never share one. The
time in an id and a record's ``created`` are the wall clock's, for people; what orders records by
creation (``latest``) is each record's ``sequence``, one more than the highest any record of the
directory holds when it is created (``next_sequence``), so a clock step never changes which sweep is
the latest. A
client dispatching a sweep holds its lock (``sweeps/.<id>.lock``), so a ``--resume`` of a sweep that
is still running fails instead of running it twice; the OS releases the lock if the client dies.

Every write of a record holds its record lock (``sweeps/.<id>.json.lock``) and replaces the file
atomically. Logs in ``APPEND_ONLY`` (the waivers) grow only through ``append_entry``; any other
write of the record keeps the log as it is on disk, so a client rewriting the record it holds in
memory while a sweep runs never drops an entry another process appended meanwhile.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from orchestrator.errors import InvalidInputError, UnknownSweepError
from orchestrator.spec.record import SweepRecord
from orchestrator.spec.results_format import RECORD_KEY, NewerFormatError, checked_version
from orchestrator.store.atomic import write_text_atomic

APPEND_ONLY: tuple[str, ...] = ("waivers",)  # record keys holding logs that only ``append_entry`` grows
RECORD_LOCK_TIMEOUT_S = 60.0
SWEEP_LOCK_WAIT_S = 5.0
HEAD_BYTES = 4096  # a record's top-level keys before its spec: where ``sequence`` is written

_ID_TIME = re.compile(r"-(\d{8}T\d{6})(?:-(\d+))?\Z")
_SEQUENCE = re.compile(r'^  "sequence": (\d{1,18}),?$', re.MULTILINE)  # a top-level key (indent 2)


def sweeps_dir(results_root: Path) -> Path:
    return results_root / "sweeps"


def record_path(results_root: Path, sweep_id: str) -> Path:
    return sweeps_dir(results_root) / f"{sweep_id}.json"


def base_sweep_id(name: str, now: datetime) -> str:
    """``<name>-<UTC yyyymmddTHHMMSS>`` for a sweep started at ``now``."""
    return f"{name}-{now.astimezone(UTC):%Y%m%dT%H%M%S}"


def reserve_sweep_id(results_root: Path, name: str, now: datetime) -> str:
    """Claim a fresh sweep id by creating its (empty) record exclusively; return the id."""
    return reserve_id(sweeps_dir(results_root), name, now)


def reserve_id(directory: Path, name: str, now: datetime) -> str:
    """Claim ``<name>-<UTC time>[-n]`` by creating ``directory/<id>.json`` (empty) exclusively."""
    directory.mkdir(parents=True, exist_ok=True)
    base = base_sweep_id(name, now)
    for n in range(1, 10_000):
        record_id = base if n == 1 else f"{base}-{n}"
        try:
            with open(directory / f"{record_id}.json", "x", encoding="utf-8"):
                return record_id
        except FileExistsError:
            continue
    raise InvalidInputError(f"no free id for {base!r} under {directory}")


def next_sequence(directory: Path) -> int:
    """The creation number of a record created now in ``directory`` (sweeps or bisects): one more than
    the highest its records hold. Nothing else is written, so a sweep discarded for bad input leaves no
    trace; two records created at the same moment may share a number (``creation_order`` then goes by
    their ids)."""
    return 1 + max((stored_sequence(path) or 0 for path in directory.glob("[!.]*.json")), default=0)


def stored_sequence(path: Path) -> int | None:
    """The creation number the record at ``path`` holds (a top-level key written near the top, read
    from the file's head); None when it has none (older, reserved, unreadable)."""
    try:
        with open(path, "rb") as record:
            head = record.read(HEAD_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return None
    found = _SEQUENCE.search(head)
    return int(found.group(1)) if found else None


def creation_order(record_id: str, sequence: int | None) -> tuple[bool, int, str, int]:
    """Sort key of records by creation: those with a creation number after those without (written
    before numbers existed), by number; those without by the time (and ``-n``) in their id."""
    match = _ID_TIME.search(record_id)
    stamp, suffix = (match.group(1), int(match.group(2) or 1)) if match else ("", 0)
    return sequence is not None, sequence or 0, stamp, suffix


def lock_path(results_root: Path, sweep_id: str) -> Path:
    return sweeps_dir(results_root) / f".{sweep_id}.lock"


def _holder_note_path(results_root: Path, sweep_id: str) -> Path:
    return sweeps_dir(results_root) / f".{sweep_id}.lock.holder"


@contextmanager
def sweep_lock(results_root: Path, sweep_id: str, doing: str = "run") -> Iterator[None]:
    """Hold the sweep's lock while ``doing`` it (``run``: dispatching or resuming it; ``compact``), noted
    beside the lock; ``InvalidInputError`` saying what the holder does if another process holds it
    (waiting ``SWEEP_LOCK_WAIT_S`` first: ``client_alive``'s probe holds it for a moment)."""
    lock = FileLock(lock_path(results_root, sweep_id), timeout=SWEEP_LOCK_WAIT_S)
    try:
        lock.acquire()
    except Timeout:
        doing, pid = _holder_doing(results_root, sweep_id)
        raise InvalidInputError(f"sweep {sweep_id!r} {doing} by another shasweep process ("
                                f"{f'pid {pid}, ' if pid else ''}holding {lock.lock_file}); try again once "
                                "it is done") from None
    note = _holder_note_path(results_root, sweep_id)
    try:
        temp = note.with_name(f"{note.name}.{os.getpid()}")
        temp.write_text(json.dumps({"doing": doing, "pid": os.getpid()}), encoding="utf-8")
        os.replace(temp, note)
        yield
    finally:
        note.unlink(missing_ok=True)
        lock.release()


_DOING = {"run": "is being run", "compact": "is being compacted"}


def _holder_doing(results_root: Path, sweep_id: str) -> tuple[str, int | None]:
    """What the process holding the sweep's lock does and its pid, from its note (another process's
    text: read capped, only a known word and a number taken)."""
    try:
        fd = os.open(_holder_note_path(results_root, sweep_id), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        try:
            note = json.loads(os.read(fd, 4096)) if stat.S_ISREG(os.fstat(fd).st_mode) else {}
        finally:
            os.close(fd)
        doing, pid = _DOING[note["doing"]], int(note["pid"])
    except (OSError, ValueError, TypeError, KeyError):
        return "is being run or compacted", None
    return doing, pid


def client_alive(results_root: Path, sweep_id: str) -> bool:
    """Whether a process holds the sweep's lock: the client dispatching it. A record says ``running``
    from its start; only this tells whether its client is still there (it may have been killed).
    Probed with a shared, non-blocking ``flock`` released at once; when the lock cannot be opened
    (another user's), the answer is True: the record is trusted."""
    try:
        fd = os.open(lock_path(results_root, sweep_id), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return False
    except OSError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # releases the probe's flock, if it got one
    return False


def discard(results_root: Path, sweep_id: str) -> None:
    """Remove the record and locks of a sweep that was reserved but never dispatched."""
    record_path(results_root, sweep_id).unlink(missing_ok=True)
    lock_path(results_root, sweep_id).unlink(missing_ok=True)
    _holder_note_path(results_root, sweep_id).unlink(missing_ok=True)
    _record_lock_path(results_root, sweep_id).unlink(missing_ok=True)


def _record_lock_path(results_root: Path, sweep_id: str) -> Path:
    return sweeps_dir(results_root) / f".{sweep_id}.json.lock"


@contextmanager
def _record_lock(results_root: Path, sweep_id: str) -> Iterator[None]:
    """Hold the lock every write of the record takes (briefly: one read and one rename)."""
    sweeps_dir(results_root).mkdir(parents=True, exist_ok=True)
    lock = FileLock(_record_lock_path(results_root, sweep_id), timeout=RECORD_LOCK_TIMEOUT_S)
    try:
        lock.acquire()
    except Timeout:
        raise InvalidInputError(f"the record of sweep {sweep_id!r} stayed locked for "
                                f"{RECORD_LOCK_TIMEOUT_S:g} s ({lock.lock_file})") from None
    try:
        yield
    finally:
        lock.release()


def write_record(results_root: Path, record: SweepRecord) -> Path:
    """Write ``record`` atomically, keeping the ``APPEND_ONLY`` logs as they are on disk."""
    with _record_lock(results_root, record.sweep_id):
        on_disk = _read_if_any(record_path(results_root, record.sweep_id))
        kept = {key: on_disk[key] for key in APPEND_ONLY if key in on_disk}
        return _replace_record(results_root, record.sweep_id, {**record.to_json(), **kept})


def append_entry(results_root: Path, sweep_id: str, key: str, entry: dict[str, Any]) -> SweepRecord:
    """Append ``entry`` to the log ``key`` of the stored record (never rewriting earlier entries) and
    return the record as written; ``UnknownSweepError`` if there is no record."""
    if key not in APPEND_ONLY:
        raise ValueError(f"{key!r} is not an append-only log of the sweep record")
    with _record_lock(results_root, sweep_id):
        record = read_record_json(results_root, sweep_id)
        checked_version(record.get(RECORD_KEY), str(record_path(results_root, sweep_id)))  # never a newer one
        record[key] = [*record.get(key, []), entry]
        _replace_record(results_root, sweep_id, record)
    return _typed(results_root, sweep_id, record)


def write_json(path: Path, record: dict[str, Any]) -> Path:
    """Write ``record`` as JSON to ``path`` atomically (temporary file, fsync, rename)."""
    text = json.dumps(record, indent=2, default=str) + "\n"  # key order kept: sides in declaration order
    return write_text_atomic(path, text)


def _read_if_any(path: Path) -> dict[str, Any]:
    """The record at ``path``; empty when there is none yet (reserved) or it cannot be parsed."""
    try:
        loaded = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def _replace_record(results_root: Path, sweep_id: str, record: dict[str, Any]) -> Path:
    return write_json(record_path(results_root, sweep_id), record)


def read_record(results_root: Path, sweep_id: str) -> SweepRecord:
    """The stored record of ``sweep_id``; ``UnknownSweepError`` if there is none, ``InvalidInputError``
    naming the file and key if it has an unexpected shape."""
    return _typed(results_root, sweep_id, read_record_json(results_root, sweep_id))


def read_record_json(results_root: Path, sweep_id: str) -> dict[str, Any]:
    """The stored record of ``sweep_id`` as its JSON holds it (what ``--resume`` checks the digest of)."""
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


def record_summary(results_root: Path, sweep_id: str) -> tuple[str | None, str | None]:
    """(created, status) of the stored record, read without typing the whole record (what the results
    index keeps of it); (None, None) without a readable record, None for a field that is not text.
    A record without a status is running, as ``SweepRecord``'s default says."""
    try:
        raw = read_record_json(results_root, sweep_id)
    except InvalidInputError:
        return None, None
    if not isinstance(raw, dict):
        return None, None
    created, status = raw.get("created"), raw.get("status", "running")
    return (created if isinstance(created, str) else None), (status if isinstance(status, str) else None)


def _typed(results_root: Path, sweep_id: str, raw: object) -> SweepRecord:
    try:
        return SweepRecord.from_json(raw, str(record_path(results_root, sweep_id)))
    except NewerFormatError:
        raise
    except InvalidInputError as exc:
        raise InvalidInputError(f"the sweep record {record_path(results_root, sweep_id)} has an unexpected "
                                f"shape: {exc}") from None


def sweeps_by_creation(results_root: Path) -> list[str]:
    """Every recorded sweep id (reserved ones too), the most recently created first
    (``creation_order``, from each record's head: no record is parsed)."""
    paths = sweeps_dir(results_root).glob("[!.]*.json")
    return [path.stem for path in sorted(paths, key=lambda p: creation_order(p.stem, stored_sequence(p)),
                                         reverse=True)]


def latest_sweep_id(results_root: Path) -> str:
    """The most recently created sweep (``creation_order``), whatever the times in the ids say."""
    for sweep_id in sweeps_by_creation(results_root):
        if record_path(results_root, sweep_id).stat().st_size > 0:  # not only reserved
            return sweep_id
    raise UnknownSweepError(f"no sweeps recorded under {sweeps_dir(results_root)}")


def resolve_sweep_id(results_root: Path, sweep_id: str) -> str:
    """``latest`` -> the newest sweep id; any other id is returned as given."""
    return latest_sweep_id(results_root) if sweep_id == "latest" else sweep_id
