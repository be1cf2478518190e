"""Launching and stopping a bench process: own session, parent-death signal, no shell."""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """Runs in the child before exec: SIGKILL it when the launching thread's process dies."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")


def launch(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    stdout_path: Path,
    stderr_path: Path,
    cpus: set[int] | None = None,
) -> subprocess.Popen:
    """Start ``argv`` (no shell) in its own session with stdout/stderr going to files.

    The child gets SIGKILL if this process dies, so a crashed worker leaves no orphan bench.
    ``cpus`` pins the child to those CPUs.
    """
    if not argv:
        raise ValueError("empty bench command")

    def setup_child() -> None:
        _die_with_parent()
        if cpus:
            os.sched_setaffinity(0, cpus)

    with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
        return subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,
            preexec_fn=setup_child,
        )


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the whole process group of ``proc`` (its session) and reap it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def file_tail(path: Path, max_bytes: int = 4096) -> str:
    """The last ``max_bytes`` of a text file (decoded leniently); '' if it does not exist."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - max_bytes))
            return f.read().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return ""
