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

KILL_WAIT_S = 5.0


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
    the next holder can clean up."""
    with open(marker, "w") as out:  # truncating in place: the marker may belong to another user
        out.write("".join(f"{key}\n" for key in run_keys))


def clear_note(marker: Path) -> None:
    try:
        with open(marker, "w"):
            pass
    except FileNotFoundError:
        pass


def kill_leftover_run(marker: Path) -> list[int]:
    """Kill what is left of the runs noted in ``marker`` (its holder died mid-run), then clear it."""
    try:
        run_keys = marker.read_text().split()
    except (FileNotFoundError, PermissionError):
        return []
    killed = [pid for key in run_keys for pid in kill_run_processes(key)]
    clear_note(marker)
    return killed
