"""Nothing outlives its run: every process that carries a run's key is killed when the run ends.

The bench starts with ``contract.RUN_KEY_VAR`` in its environment and every process it starts
inherits it, including daemons that left its session with ``setsid``. Killing the bench's process
group misses those; looking the key up in every process's environment does not. A process that
scrubbed its environment escapes this, which is documented (docs/operations.md, "When something dies").
"""

from __future__ import annotations

import os
from pathlib import Path

import psutil

from orchestrator.contract import RUN_KEY_VAR
from orchestrator.worker.safe_files import NotRegularFileError, read_head, write_regular

KILL_WAIT_S = 5.0
MAX_MARKER_BYTES = 4096


def processes_with_run_key(run_key: str) -> list[psutil.Process]:
    """Every process (other than this one) whose environment carries ``run_key``."""
    found = []
    me = os.getpid()
    for process in psutil.process_iter():
        if process.pid == me:
            continue
        try:
            if process.environ().get(RUN_KEY_VAR) == run_key:
                found.append(process)
        except (psutil.Error, OSError):  # gone, a zombie, or another user's
            continue
    return found


def kill_run_processes(run_key: str) -> list[int]:
    """SIGKILL every process carrying ``run_key`` and wait for them to go; returns their pids."""
    victims = processes_with_run_key(run_key)
    for process in victims:
        try:
            process.kill()
        except psutil.Error:
            continue
    psutil.wait_procs(victims, timeout=KILL_WAIT_S)
    return [process.pid for process in victims]


def note_running(marker: Path, *run_keys: str) -> None:
    """Note next to the host lock which runs hold the bench (a lockstep round: all of its runs), so
    the next holder can clean up. Written in place (the marker may belong to another user), only if
    it is a regular file."""
    try:
        write_regular(marker, "".join(f"{key}\n" for key in run_keys).encode())
    except NotRegularFileError:  # someone put a FIFO or link there: no note, never a hang
        pass


def clear_note(marker: Path) -> None:
    note_running(marker)


def noted_runs(marker: Path) -> list[str]:
    """The run keys the marker notes (none when it cannot be read as a regular file)."""
    try:
        return read_head(marker, MAX_MARKER_BYTES).decode("utf-8", errors="replace").split()
    except (NotRegularFileError, PermissionError):
        return []


def kill_leftover_run(marker: Path) -> list[int]:
    """Kill what is left of the runs noted in ``marker`` (its holder died mid-run), then clear it."""
    run_keys = noted_runs(marker)
    killed = [pid for key in run_keys for pid in kill_run_processes(key)]
    clear_note(marker)
    return killed
