"""One bench at a time per bench host, whoever runs it: the host lock, one file per host id.

The lock lives outside any ``SHASWEEP_HOME`` so that two users, two homes, or a container worker
and a native run on one machine share it: by default ``/tmp/shasweep-locks/<host id>.lock`` (the
host id is ``SHASWEEP_HOST_ID`` or the hostname), in a directory made world-writable and sticky
(like ``/tmp`` itself) when shasweep creates it, with the lock and its note files readable and
writable by everyone. ``SHASWEEP_LOCK_DIR`` names another directory and ``SHASWEEP_LOCK`` another
file; every bench worker of a machine must then use the same one and the same host id (the
compose files bind-mount the directory). A systemd unit with ``PrivateTmp=yes`` has its own
``/tmp``: set ``SHASWEEP_LOCK_DIR`` there.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock

DEFAULT_LOCK_DIR = Path("/tmp/shasweep-locks")
LOCK_VAR = "SHASWEEP_LOCK"
LOCK_DIR_VAR = "SHASWEEP_LOCK_DIR"
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]")
_SHARED_DIR_MODE = 0o1777
_SHARED_FILE_MODE = 0o666


def host_lock_path(host: str) -> Path:
    """The lock of bench host ``host``: ``$SHASWEEP_LOCK``, else ``<lock dir>/<host>.lock``."""
    override = os.environ.get(LOCK_VAR)
    if override:
        return Path(override)
    directory = Path(os.environ.get(LOCK_DIR_VAR) or DEFAULT_LOCK_DIR)
    return directory / f"{_SAFE_NAME.sub('_', host)}.lock"


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
def machine_lock(lock: Path) -> Iterator[Path]:
    """Hold the host lock ``lock`` (``host_lock_path``; blocking until it is free); yields the path
    of its run note."""
    prepare_lock_dir(lock.parent)
    shared_file(lock)
    marker = shared_file(marker_path(lock))
    with FileLock(lock, mode=_SHARED_FILE_MODE):
        yield marker
