"""Bench logs (``$SHASWEEP_HOME/logs/<sweep>/<run_key>/``) trimmed by age and total size.

A run's log directory holds the bench's stdout, stderr and stream; a chatty bench writes tens of
MB per run. ``shasweep gc`` removes run directories older than a maximum age, then the oldest
ones until the total is under a maximum size, and then the sweep directories left empty.
"""

from __future__ import annotations

import shutil
import time
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
        if not run_dir.is_dir() or run_dir.is_symlink():
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


def remove_logs(doomed: list[tuple[RunLogs, str]]) -> None:
    """Remove the run directories, then their sweep directories if that left them empty."""
    for logs, _ in doomed:
        shutil.rmtree(logs.path, ignore_errors=True)
    for parent in {logs.path.parent for logs, _ in doomed}:
        try:
            parent.rmdir()
        except OSError:  # not empty
            pass
