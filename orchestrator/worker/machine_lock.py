"""One bench at a time per bench host, whoever runs it: the host lock, one file per host id.

The lock lives outside any ``SHASWEEP_HOME`` so that two users, two homes, or a container worker
and a native run on one machine share it: by default ``/tmp/shasweep-locks/<host id>.lock`` (the
host id is ``SHASWEEP_HOST_ID`` or the hostname), in a directory made world-writable and sticky
(like ``/tmp`` itself) when shasweep creates it, with the lock and its note files readable and
writable by everyone. ``SHASWEEP_LOCK_DIR`` names another directory and ``SHASWEEP_LOCK`` another
file; every bench worker of a machine must then use the same one and the same host id (the
compose files bind-mount the directory). A systemd unit with ``PrivateTmp=yes`` has its own
``/tmp``: set ``SHASWEEP_LOCK_DIR`` there.

Whoever holds the lock notes who it is next to it (``<lock>.holder``: sweep, run, pid, since when),
so a run that has to wait can say what it waits for ("held by sweep X (pid P) for 23 s").
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

from filelock import FileLock, Timeout

DEFAULT_LOCK_DIR = Path("/tmp/shasweep-locks")
LOCK_VAR = "SHASWEEP_LOCK"
LOCK_DIR_VAR = "SHASWEEP_LOCK_DIR"
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]")
_SHARED_DIR_MODE = 0o1777
_SHARED_FILE_MODE = 0o666
MAX_HOLDER_BYTES = 4096
_UNPRINTABLE = re.compile(r"[^\x20-\x7e]")


@dataclass(frozen=True)
class Holder:
    """Who holds a host lock: the sweep and run, the process, and since when (epoch seconds)."""

    sweep_id: str
    run_key: str
    pid: int
    since: float

    def describe(self, now: float | None = None) -> str:
        """``held by sweep X (pid P) for 23 s``."""
        held = max(0.0, (time.time() if now is None else now) - self.since)
        return f"held by sweep {self.sweep_id} (pid {self.pid}) for {held:.0f} s"


def host_lock_path(host: str) -> Path:
    """The lock of bench host ``host``: ``$SHASWEEP_LOCK``, else ``<lock dir>/<host>.lock``."""
    override = os.environ.get(LOCK_VAR)
    if override:
        return Path(override)
    directory = Path(os.environ.get(LOCK_DIR_VAR) or DEFAULT_LOCK_DIR)
    return directory / f"{_SAFE_NAME.sub('_', host)}.lock"


def holder_path(lock: Path) -> Path:
    """The note, next to the lock, of who holds it (``Holder``)."""
    return lock.with_name(f"{lock.name}.holder")


def read_holder(lock: Path) -> Holder | None:
    """The holder noted next to ``lock``; None when there is no readable note. The note is another
    process's (maybe another user's) text: read capped, fields checked, text made printable."""
    try:
        with open(holder_path(lock), "rb") as note:
            raw = json.loads(note.read(MAX_HOLDER_BYTES))
        return Holder(sweep_id=_UNPRINTABLE.sub("?", str(raw["sweep_id"]))[:120],
                      run_key=_UNPRINTABLE.sub("?", str(raw["run_key"]))[:120],
                      pid=int(raw["pid"]), since=float(raw["since"]))
    except (OSError, ValueError, TypeError, KeyError):
        return None


def _write_holder(lock: Path, holder: Holder | None) -> None:
    """Note ``holder`` (None: clear the note), in place: the file may be another user's."""
    try:
        with open(shared_file(holder_path(lock)), "w") as note:
            note.write(json.dumps(asdict(holder)) if holder else "")
    except OSError:  # a note is a courtesy to waiters, never a reason to fail a run
        pass


def marker_path(lock: Path) -> Path:
    """The note, next to the lock, of the run that holds it (see ``worker.cleanup``)."""
    return lock.with_name(f"{lock.name}.run")


def shared_file(path: Path) -> Path:
    """Create ``path`` if needed, readable and writable by every user (when this user owns it)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, _SHARED_FILE_MODE)
    try:
        os.fchmod(fd, _SHARED_FILE_MODE)
    except PermissionError:  # another user's file: its creator made it shared
        pass
    finally:
        os.close(fd)
    return path


def prepare_lock_dir(directory: Path) -> None:
    """Create the lock directory if needed; the default one world-writable and sticky."""
    if not directory.is_dir():
        directory.mkdir(parents=True, exist_ok=True)
        if directory == DEFAULT_LOCK_DIR:
            try:
                os.chmod(directory, _SHARED_DIR_MODE)
            except PermissionError:  # created by another user a moment ago
                pass


@contextmanager
def machine_lock(lock: Path, sweep_id: str | None = None, run_key: str = "",
                 on_wait: Callable[[Holder | None], None] = lambda holder: None) -> Iterator[Path]:
    """Hold the host lock ``lock`` (``host_lock_path``), noting this process as its holder for
    ``sweep_id``'s ``run_key``; yields the path of its run note. When the lock is taken, ``on_wait``
    is called once with who holds it (None: not noted) before waiting until it is free."""
    prepare_lock_dir(lock.parent)
    shared_file(lock)
    marker = shared_file(marker_path(lock))
    held = FileLock(lock, mode=_SHARED_FILE_MODE)
    try:
        held.acquire(timeout=0)
    except Timeout:
        on_wait(read_holder(lock))
        held.acquire()
    try:
        if sweep_id is not None:
            _write_holder(lock, Holder(sweep_id, run_key, os.getpid(), time.time()))
        yield marker
    finally:
        if sweep_id is not None:
            _write_holder(lock, None)
        held.release()
