"""Launching and stopping a bench process: own session, no shell, nothing of ours inside it.

The worker is multi-threaded and big, so it never forks the bench itself. ``launch`` hands the
command to a launch helper (``worker.bench_spawn``, a single-threaded ``python -I -S`` kept for the
next launch: ``worker.helper_pool``), which ``posix_spawn``s the bench straight into its command,
reaps it with ``os.wait4``, kills whatever the bench left under it (the helper is the subreaper of
the bench's whole process tree) and reports its exit status, wall time (spawn to reap), CPU seconds
and peak RSS (``peak_rss_kib``) on a pipe. The bench dies with the worker: the helper kills
everything under it when that pipe closes.

Commands that are not measured (``git worktree add``) start through ``dying_with_parent``: a tiny
exec helper that asks the kernel for SIGKILL on its parent's death (``PR_SET_PDEATHSIG``) and
``exec``s the command in its place.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from orchestrator.contract import BenchUsage
from orchestrator.worker import helper_pool
from orchestrator.worker.helper_pool import LaunchHelper
from orchestrator.worker.safe_files import NotRegularFileError, read_tail

EXEC_HELPER_FAILED = 127  # the exit code of a command that could not be started

# argv: PARENT_PID COMMAND...
_EXEC_HELPER = """\
import ctypes, os, signal, sys
parent, argv = int(sys.argv[1]), sys.argv[2:]
try:
    if ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    if os.getppid() != parent:
        sys.exit(127)
    os.execvp(argv[0], argv)
except OSError as exc:
    print(f"shasweep: cannot start {argv[0]!r}: {exc}", file=sys.stderr, flush=True)
    sys.exit(127)
"""


def dying_with_parent(argv: Sequence[str]) -> list[str]:
    """``argv`` wrapped in the exec helper: it gets SIGKILL when this process dies."""
    return [sys.executable, "-I", "-S", "-c", _EXEC_HELPER, str(os.getpid()), *argv]


class BenchProcess:
    """A running bench: its pid (which leads its own session and process group), exit code, usage.

    The launch helper is its parent: it reaps the bench, kills what it left behind and reports the
    exit status and resource usage, which ``poll`` and ``wait`` read; the helper then goes back to
    serve the next launch.
    """

    def __init__(self, helper: LaunchHelper, pid: int | None, floor_kib: int = 0) -> None:
        self._helper: LaunchHelper | None = helper
        self.pid = pid
        self.helper_pid = helper.process.pid if pid is not None else None  # its tree's root (the subreaper)
        self.floor_kib = floor_kib  # the helper's own peak RSS when it forked the bench
        self.returncode: int | None = None if pid is not None else EXEC_HELPER_FAILED
        self.usage: BenchUsage | None = None
        if pid is None:
            self._release(helper.alive())

    def poll(self) -> int | None:
        """The exit code if the bench has exited (and was reaped), else None."""
        if self.returncode is None:
            self._read(block=False)
        return self.returncode

    def wait(self) -> int:
        while self.returncode is None:
            self._read(block=True)
        return self.returncode

    def kill_group(self) -> None:
        """SIGKILL the bench's whole process group (its session) and wait for it to be reaped (the
        helper kills whatever else it left)."""
        self.signal_group(signal.SIGKILL)
        self.wait()

    def signal_group(self, signum: int) -> None:
        """Send ``signum`` to the bench's process group while it is not reaped (safe from any thread)."""
        if self.pid is not None and self.returncode is None:
            try:
                os.killpg(self.pid, signum)
            except (ProcessLookupError, PermissionError):
                pass

    def _read(self, block: bool) -> None:
        """Read what the helper reported; its exit report sets ``returncode`` and ``usage``."""
        assert self._helper is not None
        try:
            report = self._helper.receive(block)
        except EOFError:  # the helper died without reporting: end the bench, whose fate is unknown
            self.signal_group(signal.SIGKILL)
            self.returncode = -signal.SIGKILL
            self._release(alive=False)
            return
        if report is not None:
            self._finish(report)

    def _finish(self, report: dict) -> None:
        self.returncode = os.waitstatus_to_exitcode(report["status"])
        rss_kib, source = peak_rss_kib(report["maxrss_kib"], report["hwm_kib"], self.floor_kib)
        self.usage = BenchUsage(wall_s=report["wall_ns"] / 1e9, user_s=report["user_s"],
                                sys_s=report["sys_s"], rss_source=source,
                                max_rss_mib=None if rss_kib is None else rss_kib / 1024)
        self._release(alive=True)

    def _release(self, alive: bool) -> None:
        """This bench is done with its helper: back to the idle ones, or closed if it died."""
        helper, self._helper = self._helper, None
        if helper is not None and alive:
            helper_pool.give_back(helper)
        elif helper is not None:
            helper.close()


def peak_rss_kib(maxrss_kib: int, hwm_kib: int | None, floor_kib: int) -> tuple[int | None, str]:
    """The bench's own peak RSS and where it came from.

    ``maxrss_kib`` (``wait4``: the largest of the bench and its waited-for children) is at least the
    launching helper's peak at the fork, ``floor_kib``; above it, it is the bench's own (``rusage``).
    Otherwise the bench's sampled ``VmHWM`` (``VmHWM``), a lower bound for a process that grew after
    its last sample; otherwise none.
    """
    if maxrss_kib > floor_kib:
        return max(maxrss_kib, hwm_kib or 0), "rusage"
    if hwm_kib:
        return hwm_kib, "VmHWM"
    return None, "none"


def with_reported_rss(proc: BenchProcess, reported_mib: float | None) -> BenchUsage | None:
    """``proc``'s usage, its peak RSS taken from the bench's own report (``bench``) where the kernel
    gave none; a report no higher than the helper's floor is that floor, not the bench's own."""
    usage = proc.usage
    if usage is None or usage.max_rss_mib is not None or reported_mib is None:
        return usage
    if reported_mib * 1024 <= proc.floor_kib:
        return usage
    return replace(usage, max_rss_mib=reported_mib, rss_source="bench")


def launch(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    stdout_path: Path,
    stderr_path: Path,
    cpus: set[int] | None = None,
) -> BenchProcess:
    """Start ``argv`` (no shell) through a launch helper, in its own session, with stdout/stderr
    going to files; ``cpus`` pins it to those CPUs. The bench gets SIGKILL if this process dies."""
    if not argv:
        raise ValueError("empty bench command")
    request = {"argv": list(argv), "cwd": str(cwd), "env": dict(env), "stdout": str(stdout_path),
               "stderr": str(stderr_path), "cpus": sorted(cpus) if cpus else None}
    helper = helper_pool.take()
    try:
        started = _request(helper, request)
    except EOFError:  # an idle helper that died since its last bench: a new one starts it
        helper.close()
        helper = LaunchHelper()
        try:
            started = _request(helper, request)
        except EOFError:
            started = {"error": "the launch helper died"}
    if "started" not in started:
        return BenchProcess(helper, None)
    return BenchProcess(helper, started["started"], started["floor_kib"])


def _request(helper: LaunchHelper, request: dict) -> dict:
    helper.send(request)
    reply = helper.receive(block=True)
    assert reply is not None
    return reply


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
