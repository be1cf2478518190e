"""Launching and stopping a bench process: own session, parent-death signal, no shell, no preexec_fn.

The worker is multi-threaded, so nothing but exec may run in the forked child (a ``preexec_fn``
is not async-signal-safe there). The bench therefore starts as a tiny exec helper: a fresh,
single-threaded ``python -I -S`` that asks the kernel for SIGKILL on its parent's death
(``PR_SET_PDEATHSIG``), checks with ``getppid`` that the parent did not die before that took
effect, pins itself to the bench CPUs and ``exec``s the bench command in its place (same pid).
The signal fires when the thread that started the bench exits; that thread waits for the bench,
so in practice it fires when the worker process dies.

``BenchProcess`` reaps the bench with ``os.wait4`` so its resource usage (CPU seconds, peak RSS)
is known.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from orchestrator.store.parquet import BenchUsage
from orchestrator.worker.safe_files import NotRegularFileError, read_tail

EXEC_HELPER_FAILED = 127  # the helper's exit code when it could not set up or exec the bench

# argv: PARENT_PID CPUS COMMAND...; CPUS is "" or a comma-separated list.
_EXEC_HELPER = """\
import ctypes, os, signal, sys
parent, cpus, argv = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
try:
    if ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    if os.getppid() != parent:
        sys.exit(127)
    if cpus:
        os.sched_setaffinity(0, {int(c) for c in cpus.split(",")})
    os.execvp(argv[0], argv)
except OSError as exc:
    print(f"shasweep: cannot start the bench {argv[0]!r}: {exc}", file=sys.stderr, flush=True)
    sys.exit(127)
"""


def dying_with_parent(argv: Sequence[str], cpus: set[int] | None = None) -> list[str]:
    """``argv`` wrapped in the exec helper: it gets SIGKILL when this process dies."""
    cpu_list = ",".join(str(c) for c in sorted(cpus or ()))
    return [sys.executable, "-I", "-S", "-c", _EXEC_HELPER, str(os.getpid()), cpu_list, *argv]


class BenchProcess:
    """A running bench: its pid (which leads its own session and process group), exit code, usage."""

    def __init__(self, popen: subprocess.Popen) -> None:
        self._popen = popen
        self.pid = popen.pid
        self.returncode: int | None = None
        self.usage: BenchUsage | None = None

    def poll(self) -> int | None:
        """The exit code if the bench has exited (reaping it), else None."""
        if self.returncode is None:
            self._reap(os.WNOHANG)
        return self.returncode

    def wait(self) -> int:
        while self.returncode is None:
            self._reap(0)
        return self.returncode

    def kill_group(self) -> None:
        """SIGKILL the bench's whole process group (its session) and reap the bench."""
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.wait()

    def _reap(self, flags: int) -> None:
        try:
            pid, status, rusage = os.wait4(self.pid, flags)
        except ChildProcessError:  # reaped elsewhere: the exit code is lost
            self._set(-signal.SIGKILL, None)
            return
        if pid:
            self._set(os.waitstatus_to_exitcode(status),
                      BenchUsage(user_s=rusage.ru_utime, sys_s=rusage.ru_stime,
                                 max_rss_mib=rusage.ru_maxrss / 1024))  # Linux: KiB

    def _set(self, code: int, usage: BenchUsage | None) -> None:
        self.returncode, self.usage = code, usage
        self._popen.returncode = code  # so Popen never waits for it again


def launch(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    stdout_path: Path,
    stderr_path: Path,
    cpus: set[int] | None = None,
) -> BenchProcess:
    """Start ``argv`` (no shell) in its own session with stdout/stderr going to files.

    The child gets SIGKILL if this process dies, so a crashed worker leaves no orphan bench.
    ``cpus`` pins the child to those CPUs.
    """
    if not argv:
        raise ValueError("empty bench command")
    with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
        popen = subprocess.Popen(dying_with_parent(argv, cpus), cwd=cwd, env=dict(env),
                                 stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True)
    return BenchProcess(popen)


def kill_group(proc: BenchProcess) -> None:
    """SIGKILL the whole process group of ``proc`` (its session) and reap it."""
    proc.kill_group()


def file_tail(path: Path, max_bytes: int = 4096) -> str:
    """The last ``max_bytes`` of a text file (decoded leniently); '' if it does not exist. Anything
    but a regular file (a bench may leave a FIFO there) is named instead of read."""
    try:
        return read_tail(path, max_bytes).decode("utf-8", errors="replace")
    except NotRegularFileError as exc:
        return f"({exc})"
