"""Bench logs (``$SHASWEEP_HOME/logs/<sweep>/<run_key>/``) trimmed by age and total size.

A run's log directory holds the bench's stdout, stderr and stream; a chatty bench writes tens of
MB per run. ``shasweep gc`` removes run directories older than a maximum age, then the oldest
ones until the total is under a maximum size, and then the sweep directories left empty.

A run in progress keeps its directory: the bench task holds a shared ``flock`` on it from before it
waits for the host lock until the bench is done (``logs_in_use``), and ``gc`` removes a directory
only while it holds an exclusive one, taken without waiting (a directory in use is skipped).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

DEFAULT_MAX_AGE_S = 14 * 86400.0
DEFAULT_MAX_MIB = 2048.0


@dataclass(frozen=True)
class RunLogs:
    """One run's log directory: where, when last written, how big."""

    path: Path
    mtime: float
    size: int


def run_logs(logs_root: Path) -> list[RunLogs]:
    """Every run log directory, oldest first."""
    found = []
    for run_dir in logs_root.glob("*/*"):
        if not run_dir.is_dir() or run_dir.is_symlink() or in_use(run_dir):
            continue
        files = [p for p in run_dir.rglob("*") if p.is_file() and not p.is_symlink()]
        stats = [p.stat() for p in files]
        mtime = max([s.st_mtime for s in stats] + [run_dir.stat().st_mtime])
        found.append(RunLogs(path=run_dir, mtime=mtime, size=sum(s.st_size for s in stats)))
    return sorted(found, key=lambda logs: logs.mtime)


def logs_to_trim(logs_root: Path, max_age_s: float = DEFAULT_MAX_AGE_S, max_mib: float = DEFAULT_MAX_MIB,
                 now: float | None = None) -> list[tuple[RunLogs, str]]:
    """``(run logs, why)`` for every run directory to remove: too old, or beyond the size budget."""
    now = time.time() if now is None else now
    every = run_logs(logs_root)
    doomed = [(logs, "older than the maximum age") for logs in every if now - logs.mtime > max_age_s]
    kept = [logs for logs in every if now - logs.mtime <= max_age_s]
    total = sum(logs.size for logs in kept)
    budget = max_mib * 2**20
    for logs in kept:  # oldest first
        if total <= budget:
            break
        doomed.append((logs, "over the size budget"))
        total -= logs.size
    return doomed


@contextmanager
def logs_in_use(run_dir: Path) -> Iterator[Path]:
    """Create the run's log directory and keep ``gc`` from removing it inside the block."""
    while True:
        run_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(run_dir, os.O_RDONLY | os.O_DIRECTORY)
        fcntl.flock(fd, fcntl.LOCK_SH)  # waits while a gc removes it
        try:
            if os.path.samestat(os.fstat(fd), os.stat(run_dir)):
                break
        except FileNotFoundError:
            pass
        os.close(fd)  # removed before the lock was ours: make it again
    try:
        yield run_dir
    finally:
        os.close(fd)


def in_use(run_dir: Path) -> bool:
    """Whether a run holds ``run_dir`` (``logs_in_use``)."""
    with _removal_lock(run_dir) as free:
        return not free


def remove_logs(doomed: list[tuple[RunLogs, str]]) -> None:
    """Remove the run directories no run holds, then their sweep directories if that left them empty."""
    for logs, _ in doomed:
        with _removal_lock(logs.path) as free:
            if free:
                shutil.rmtree(logs.path, ignore_errors=True)
    for parent in {logs.path.parent for logs, _ in doomed}:
        try:
            parent.rmdir()
        except OSError:  # not empty
            pass


@contextmanager
def _removal_lock(run_dir: Path) -> Iterator[bool]:
    """Try the exclusive lock of ``run_dir`` without waiting; yields whether it is held (a directory
    that is gone counts as free)."""
    try:
        fd = os.open(run_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except (FileNotFoundError, NotADirectoryError):
        yield True
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)
