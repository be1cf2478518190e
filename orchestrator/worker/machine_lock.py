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

The directory is shared with other users, so nothing in it is trusted (docs/operations.md,
"Security"): every file there is opened with ``O_NOFOLLOW``, never truncated on
open, and used only if it is a regular file with one link; only a file this user owns is made
shared. Its owner (and whoever else may write it) can hold or remove a lock, never make shasweep
write anywhere else.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import re
import stat
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

from orchestrator.errors import InvalidInputError, RunCancelledError
from orchestrator.worker.safe_files import file_kind, read_head, write_regular

DEFAULT_LOCK_DIR = Path("/tmp/shasweep-locks")
LOCK_VAR = "SHASWEEP_LOCK"
LOCK_DIR_VAR = "SHASWEEP_LOCK_DIR"
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]")
_SHARED_DIR_MODE = 0o1777
_SHARED_FILE_MODE = 0o666
MAX_HOLDER_BYTES = 4096
_UNPRINTABLE = re.compile(r"[^\x20-\x7e]")
WAIT_POLL_S = 0.5  # how often a run waiting for the lock asks whether its sweep was cancelled


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
        raw = json.loads(read_head(holder_path(lock), MAX_HOLDER_BYTES))  # a regular file only
        return Holder(sweep_id=_UNPRINTABLE.sub("?", str(raw["sweep_id"]))[:120],
                      run_key=_UNPRINTABLE.sub("?", str(raw["run_key"]))[:120],
                      pid=int(raw["pid"]), since=float(raw["since"]))
    except (OSError, ValueError, TypeError, KeyError):
        return None


def _write_holder(lock: Path, holder: Holder | None) -> None:
    """Note ``holder`` (None: clear the note), in place: the file may be another user's."""
    try:
        write_regular(shared_file(holder_path(lock)), json.dumps(asdict(holder)).encode() if holder else b"")
    except OSError:  # a note is a courtesy to waiters, never a reason to fail a run (nor a FIFO a hang)
        pass


def marker_path(lock: Path) -> Path:
    """The note, next to the lock, of the run that holds it (see ``worker.cleanup``)."""
    return lock.with_name(f"{lock.name}.run")


class LockDirError(InvalidInputError):
    """The host lock directory, or a file in it, is not what shasweep may safely use."""


def open_shared(path: Path) -> int:
    """A read-write descriptor of ``path`` in the shared lock directory, created if needed: never
    through a symbolic link, never truncated, only a regular file with one link (a hard link to
    another file would make its content ours to write); made readable and writable by every user
    only when this user owns it. ``LockDirError`` names what is there otherwise."""
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, _SHARED_FILE_MODE)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENXIO, errno.EISDIR):
            raise _untrusted(path, "is a symbolic link, FIFO or directory") from None
        raise
    try:
        info = os.fstat(fd)
        kind = file_kind(info.st_mode)
        if kind is not None:
            raise _untrusted(path, f"is {kind}")
        if info.st_nlink != 1:
            raise _untrusted(path, f"has {info.st_nlink} hard links")
        if info.st_uid == os.geteuid():
            os.fchmod(fd, _SHARED_FILE_MODE)
        os.set_blocking(fd, True)
        return fd
    except BaseException:
        os.close(fd)
        raise


def shared_file(path: Path) -> Path:
    """Make sure ``path`` exists in the lock directory as ``open_shared`` accepts it."""
    os.close(open_shared(path))
    return path


def _untrusted(path: Path, what: str) -> LockDirError:
    return LockDirError(
        f"{path} {what}; shasweep uses only regular files in the host lock directory and never follows "
        f"a link there (someone who may write {path.parent} planted it?): remove it, or set "
        f"{LOCK_DIR_VAR} to a directory only you may write")


def prepare_lock_dir(directory: Path) -> None:
    """Create the lock directory if needed (the default one world-writable and sticky, like /tmp),
    then check it: a real directory (a link to one only when this user or root made the link),
    and when every user may write it, sticky (so nobody removes another user's lock file)."""
    if directory == DEFAULT_LOCK_DIR:
        try:
            directory.mkdir(mode=0o700)
            os.chmod(directory, _SHARED_DIR_MODE)
        except FileExistsError:
            pass
    else:
        directory.mkdir(parents=True, exist_ok=True)
    info = os.lstat(directory)
    if stat.S_ISLNK(info.st_mode):
        if info.st_uid not in (0, os.geteuid()):
            raise _untrusted(directory, f"is a symbolic link made by uid {info.st_uid}")
        info = os.stat(directory)
    if not stat.S_ISDIR(info.st_mode):
        raise LockDirError(f"the host lock directory {directory} is not a directory: set {LOCK_DIR_VAR} "
                           f"to one")
    if info.st_mode & stat.S_IWOTH and not info.st_mode & stat.S_ISVTX:
        raise LockDirError(
            f"the host lock directory {directory} may be written by every user but is not sticky, so any "
            f"of them could remove a held lock: chmod +t {directory}, or set {LOCK_DIR_VAR} to another")


@contextmanager
def machine_lock(lock: Path, sweep_id: str | None = None, run_key: str = "",
                 on_wait: Callable[[Holder | None], None] = lambda holder: None,
                 cancelled: Callable[[], bool] = lambda: False) -> Iterator[Path]:
    """Hold the host lock ``lock`` (``host_lock_path``), noting this process as its holder for
    ``sweep_id``'s ``run_key``; yields the path of its run note. When the lock is taken, ``on_wait``
    is called once with who holds it (None: not noted) before waiting until it is free, asking
    ``cancelled`` every ``WAIT_POLL_S`` (``RunCancelledError`` when it says so)."""
    prepare_lock_dir(lock.parent)
    held = open_shared(lock)
    try:
        marker = shared_file(marker_path(lock))
        if not _try_lock(held):
            on_wait(read_holder(lock))
            _acquire_unless_cancelled(held, lock, cancelled)
        try:
            if sweep_id is not None:
                _write_holder(lock, Holder(sweep_id, run_key, os.getpid(), time.time()))
            yield marker
        finally:
            if sweep_id is not None:
                _write_holder(lock, None)
            fcntl.flock(held, fcntl.LOCK_UN)
    finally:
        os.close(held)


def _try_lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False


def _acquire_unless_cancelled(fd: int, lock: Path, cancelled: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT_POLL_S
    while not _try_lock(fd):
        if time.monotonic() >= deadline:
            if cancelled():
                raise RunCancelledError(f"sweep cancelled while its run waited for the host lock {lock}")
            deadline = time.monotonic() + WAIT_POLL_S
        time.sleep(0.05)
