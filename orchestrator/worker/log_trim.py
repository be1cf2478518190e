"""Bench logs (``$SHASWEEP_HOME/logs/<sweep>/<run_key>/``) trimmed by age and total size, and each
sweep's kept within a cap as it runs.

A run's log directory holds the bench's stdout, stderr, stream and result document; a chatty bench
writes tens of MB per run, a pytest-benchmark suite's result hundreds (one sweep left 738 MB).
``shasweep gc`` removes run directories older than a maximum age, then the oldest ones until the
total is under a maximum size, and then the sweep directories left empty. The worker itself keeps
each sweep's logs under ``SHASWEEP_SWEEP_LOGS_MIB`` (default 256) after every run or round it stores
(``trim_sweep_logs``): the oldest runs' files larger than 64 KiB are trimmed, largest first, until
the sweep fits: a log keeps its last 64 KiB (where a failure's message is), any other file (a result
document, a stream: their numbers are in the results) goes; ``trimmed.txt`` says what went.

A run in progress keeps its directory: the bench task holds a shared ``flock`` on it from before it
waits for the host lock until the bench is done (``logs_in_use``), and ``gc`` removes a directory
only while it holds an exclusive one, taken without waiting (a directory in use is skipped).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import stat
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from orchestrator.worker.safe_files import read_tail, write_regular

DEFAULT_MAX_AGE_S = 14 * 86400.0
DEFAULT_MAX_MIB = 2048.0
SWEEP_LOGS_VAR = "SHASWEEP_SWEEP_LOGS_MIB"  # the cap of one sweep's logs on a worker host
DEFAULT_SWEEP_MAX_MIB = 256.0
TAIL_BYTES = 64 * 1024  # what a trimmed log keeps, and the smallest file trimmed
TRIM_NOTE = "trimmed.txt"


@dataclass(frozen=True)
class RunLogs:
    """One run's log directory: where, when last written, how big."""

    path: Path
    mtime: float
    size: int


def run_logs(logs_root: Path, sweep: str | None = None) -> list[RunLogs]:
    """Every run log directory (of ``sweep`` only, when given) that no run holds, oldest first."""
    found = []
    for run_dir in (logs_root / sweep).glob("*") if sweep else logs_root.glob("*/*"):
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


def sweep_logs_cap() -> float:
    """The per-sweep cap in MiB: ``$SHASWEEP_SWEEP_LOGS_MIB`` (a positive number), else the default."""
    try:
        cap = float(os.environ.get(SWEEP_LOGS_VAR, DEFAULT_SWEEP_MAX_MIB))
    except ValueError:
        return DEFAULT_SWEEP_MAX_MIB
    return cap if cap > 0 else DEFAULT_SWEEP_MAX_MIB


def trim_sweep_logs(sweep_dir: Path, max_mib: float | None = None) -> list[Path]:
    """Keep ``sweep_dir`` (one sweep's run log directories) within ``max_mib`` (default
    ``sweep_logs_cap``): while it is over, the oldest run directory no run holds has its files over
    ``TAIL_BYTES`` trimmed, largest first (a ``*.log`` to its last ``TAIL_BYTES``, anything else
    removed), each noted in its ``trimmed.txt``. Returns the files trimmed. Best effort: a file that
    vanishes or cannot be read ends the trimming until the next run (a run's outcome never waits on it)."""
    budget = (sweep_logs_cap() if max_mib is None else max_mib) * 2**20
    try:
        runs = run_logs(sweep_dir.parent, sweep_dir.name)
        total = sum(p.stat().st_size for p in sweep_dir.rglob("*") if p.is_file() and not p.is_symlink())
    except OSError:
        return []
    trimmed: list[Path] = []
    for logs in runs:  # oldest first; a run in progress is not listed
        if total <= budget:
            break
        with _removal_lock(logs.path) as free:
            if not free:
                continue
            try:
                freed, files = _trim_run(logs.path, total - budget, budget)
            except OSError:  # a file gone or unreadable: the next run trims again
                continue
            total -= freed
            trimmed += files
    return trimmed


def _trim_run(run_dir: Path, excess: float, budget: float) -> tuple[int, list[Path]]:
    """Trim ``run_dir``'s large files, largest first, until ``excess`` bytes are freed; (freed, files)."""
    large = sorted((p for p in run_dir.rglob("*") if p.is_file() and not p.is_symlink()
                    and p.name != TRIM_NOTE and p.stat().st_size > TAIL_BYTES),
                   key=lambda p: -p.stat().st_size)
    freed, notes, files = 0, [], []
    for path in large:
        if freed >= excess:
            break
        size = path.stat().st_size
        if path.suffix == ".log":
            kept = read_tail(path, TAIL_BYTES)
            write_regular(path, kept)
            notes.append(f"{path.relative_to(run_dir)}: kept its last {len(kept)} of {size} bytes")
            freed += size - len(kept)
        else:
            path.unlink(missing_ok=True)
            notes.append(f"{path.relative_to(run_dir)}: removed ({size} bytes)")
            freed += size
        files.append(path)
    if notes:
        why = f" (the sweep's logs were over {SWEEP_LOGS_VAR}={budget / 2**20:g} MiB)\n"
        _append_note(run_dir / TRIM_NOTE, "".join(line + why for line in notes))
    return freed, files


def _append_note(path: Path, text: str) -> None:
    """Append ``text`` to the regular file ``path`` (made if missing); a link or FIFO a bench left
    there is not written through."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644)
    except OSError:
        return
    with os.fdopen(fd, "ab") as note:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            note.write(text.encode())


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
