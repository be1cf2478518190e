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
from collections.abc import Sequence
from pathlib import Path

from filelock import FileLock

from orchestrator.worker.proc import file_tail, kill_group, launch

POLL_S = 0.05  # how often a prepare command is checked for its exit


class PrepareError(RuntimeError):
    """A prepare command failed; the message carries its exit and log tail."""


def ensure_prepared(argvs: Sequence[Sequence[str]], tree: Path, env: dict[str, str],
                    timeout_s: float) -> None:
    """Run ``argvs`` (rendered) in ``tree`` unless this very list already succeeded there."""
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
            _run_one(list(argv), tree, env, log, deadline, timeout_s)
        marker.write_text(json.dumps([list(a) for a in argvs]) + "\n")


def _run_one(argv: list[str], tree: Path, env: dict[str, str], log: Path, deadline: float,
             timeout_s: float) -> None:
    with open(log, "a") as out:
        out.write(f"$ {' '.join(argv)}\n")
    parts = (log.with_name(log.name + ".out"), log.with_name(log.name + ".err"))
    try:
        proc = launch(argv, cwd=tree, env=env, stdout_path=parts[0], stderr_path=parts[1])
    except OSError as exc:
        raise PrepareError(f"prepare command {argv} could not start: {exc}") from None
    try:
        while proc.poll() is None and time.monotonic() < deadline:
            time.sleep(POLL_S)
        timed_out = proc.returncode is None
    finally:
        kill_group(proc)
        with open(log, "a") as out:
            for part in parts:
                out.write(part.read_text(errors="replace"))
                part.unlink(missing_ok=True)
    if timed_out:
        raise PrepareError(f"prepare command {argv} ran past timeout_s={timeout_s:g}; log {log}:\n"
                           f"{file_tail(log, 2000)}")
    if proc.returncode != 0:
        raise PrepareError(f"prepare command {argv} exited with code {proc.returncode}; log {log}:\n"
                           f"{file_tail(log, 2000)}")
