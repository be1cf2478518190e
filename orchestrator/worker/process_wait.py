"""Waiting for a bench process that runs on its own, outside any channel (a suite's cases run apart,
an instrumented process): until it exits, ``timeout_s`` passes or the sweep is cancelled."""

from __future__ import annotations

import time
from collections.abc import Callable

from orchestrator.worker.proc import BenchProcess

POLL_S = 0.05


def await_process(proc: BenchProcess, what: str, timeout_s: float, stopped: Callable[[], bool],
                  logs: str) -> str | None:
    """Why ``proc`` (``what``, for the message; ``logs``: where its output is) did not end well, or
    None when it exited 0; a process that outlives ``timeout_s`` or a cancel is killed."""
    deadline = time.monotonic() + timeout_s
    while proc.poll() is None:
        if stopped():
            proc.kill_group()
            return f"the sweep was cancelled while {what} ran"
        if time.monotonic() > deadline:
            proc.kill_group()
            return f"{what} did not end within timeout_s={timeout_s:g}"
        time.sleep(POLL_S)
    if proc.returncode != 0:
        return f"{what} exited with code {proc.returncode} (logs: {logs})"
    return None
