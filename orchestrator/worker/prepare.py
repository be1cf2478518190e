"""Per-SHA prepare: the sweep's ``prepare`` argvs, run once in each new worktree before its first run.

A prepare that succeeded leaves a marker named after the hash of its rendered argvs next to the
worktree (``<sha>.prepared-<hash>``; the pool clears it when it re-creates the checkout), so later
runs of that SHA skip it; its log stays beside it (``<sha>.prepare-<hash>.log``). A failing prepare
caches nothing and fails the run with its log's tail.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from filelock import FileLock

from orchestrator.errors import RunCancelledError
from orchestrator.worker.proc import file_tail, kill_group, launch
from orchestrator.worker.safe_files import NotRegularFileError, read_head

POLL_S = 0.05  # how often a prepare command is checked for its exit
CANCEL_POLL_S = 0.5  # how often the sweep's cancel event is asked
MAX_OUTPUT_BYTES = 16 * 2**20  # of each of a prepare command's stdout and stderr, kept in its log


class PrepareError(RuntimeError):
    """A prepare command failed; the message carries its exit and log tail."""


def ensure_prepared(argvs: Sequence[Sequence[str]], tree: Path, env: dict[str, str],
                    timeout_s: float, cancelled: Callable[[], bool] = lambda: False) -> None:
    """Run ``argvs`` (rendered) in ``tree`` unless this very list already succeeded there; a command
    still running after ``timeout_s`` or once ``cancelled()`` says so is killed (``PrepareError``)."""
    if not argvs:
        return
    digest = hashlib.sha256(json.dumps([list(a) for a in argvs]).encode()).hexdigest()[:16]
    marker = tree.with_name(f"{tree.name}.prepared-{digest}")
    log = tree.with_name(f"{tree.name}.prepare-{digest}.log")
    with FileLock(tree.with_name(f"{tree.name}.prepare.lock")):
        if marker.exists():
            return
        log.write_text("")
        deadline = time.monotonic() + timeout_s
        for argv in argvs:
            _run_one(list(argv), tree, env, log, deadline, timeout_s, cancelled)
        marker.write_text(json.dumps([list(a) for a in argvs]) + "\n")


def _run_one(argv: list[str], tree: Path, env: dict[str, str], log: Path, deadline: float,
             timeout_s: float, cancelled: Callable[[], bool]) -> None:
    with open(log, "a") as out:
        out.write(f"$ {' '.join(argv)}\n")
    parts = (log.with_name(log.name + ".out"), log.with_name(log.name + ".err"))
    try:
        proc = launch(argv, cwd=tree, env=env, stdout_path=parts[0], stderr_path=parts[1])
    except OSError as exc:
        raise PrepareError(f"prepare command {argv} could not start: {exc}") from None
    was_cancelled = False
    try:
        next_cancel_check = 0.0
        while proc.poll() is None and time.monotonic() < deadline:
            if time.monotonic() >= next_cancel_check:
                next_cancel_check = time.monotonic() + CANCEL_POLL_S
                if was_cancelled := cancelled():
                    break
            time.sleep(POLL_S)
        timed_out = proc.returncode is None and not was_cancelled
    finally:
        kill_group(proc)
        with open(log, "a") as out:
            for part in parts:
                out.write(_output(part))
                part.unlink(missing_ok=True)
    if was_cancelled:
        raise RunCancelledError(f"sweep cancelled while prepare command {argv} ran; killed it")
    if timed_out:
        raise PrepareError(f"prepare command {argv} ran past timeout_s={timeout_s:g}; log {log}:\n"
                           f"{file_tail(log, 2000)}")
    if proc.returncode != 0:
        raise PrepareError(f"prepare command {argv} exited with code {proc.returncode}; log {log}:\n"
                           f"{file_tail(log, 2000)}")


def _output(part: Path) -> str:
    """What a prepare command wrote to ``part`` (its first ``MAX_OUTPUT_BYTES``), if a regular file."""
    try:
        return read_head(part, MAX_OUTPUT_BYTES).decode("utf-8", errors="replace")
    except NotRegularFileError as exc:
        return f"({exc})\n"
