"""One bench at a time per machine, whoever runs it: the machine-wide host lock.

The lock lives outside any ``SHASWEEP_HOME`` so that two users, two homes, or a container worker
and a native run on one machine share it: by default ``/tmp/shasweep-locks/bench.lock``, in a
directory made world-writable and sticky (like ``/tmp`` itself) when shasweep creates it, with the
lock and its note files readable and writable by everyone. ``SHASWEEP_LOCK`` names another file;
every bench worker of a machine must then use the same one (docker-compose bind-mounts the
directory). A systemd unit with ``PrivateTmp=yes`` has its own ``/tmp``: set ``SHASWEEP_LOCK`` there.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock

DEFAULT_LOCK_DIR = Path("/tmp/shasweep-locks")
LOCK_VAR = "SHASWEEP_LOCK"
_SHARED_DIR_MODE = 0o1777
_SHARED_FILE_MODE = 0o666


def host_lock_path() -> Path:
    """``$SHASWEEP_LOCK``, else ``/tmp/shasweep-locks/bench.lock``."""
    return Path(os.environ.get(LOCK_VAR) or DEFAULT_LOCK_DIR / "bench.lock")


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


@contextmanager
def machine_lock(lock: Path | None = None) -> Iterator[Path]:
    """Hold the host lock (blocking until it is free); yields the path of its run note."""
    lock = lock or host_lock_path()
    if not lock.parent.is_dir():
        lock.parent.mkdir(parents=True, exist_ok=True)
        if lock.parent == DEFAULT_LOCK_DIR:
            try:
                os.chmod(lock.parent, _SHARED_DIR_MODE)
            except PermissionError:  # created by another user a moment ago
                pass
    shared_file(lock)
    marker = shared_file(marker_path(lock))
    with FileLock(lock, mode=_SHARED_FILE_MODE):
        yield marker
