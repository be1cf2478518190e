"""The launch helpers of this process (``worker.bench_spawn``): started once, kept for the next launch.

A helper costs an interpreter start (tens of milliseconds), so it is not started per run: a launch
takes an idle one (``take``) and gives it back once its bench was reaped and its tree cleared
(``give_back``). A helper serves one bench at a time; a second launch while one runs starts another.
Idle helpers are closed when this process exits; a forked child starts with none of its own.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import subprocess
import sys
import threading
from pathlib import Path

SPAWN_HELPER = Path(__file__).with_name("bench_spawn.py")


class LaunchHelper:
    """One launch helper process and its two pipes: requests in, reports out (JSON lines)."""

    def __init__(self) -> None:
        self.process = subprocess.Popen([sys.executable, "-I", "-S", str(SPAWN_HELPER)],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0,
                                        start_new_session=True)
        self._pending = b""

    def send(self, message: dict) -> None:
        """Write one request line; ``EOFError`` when the helper is gone."""
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(json.dumps(message).encode() + b"\n")
        except OSError:  # a broken pipe
            raise EOFError("the launch helper died") from None

    def receive(self, block: bool) -> dict | None:
        """The next report; None when none is waiting and not ``block``. ``EOFError`` when the helper
        died."""
        stdout = self.process.stdout
        assert stdout is not None
        while b"\n" not in self._pending:
            if not block and not select.select([stdout], [], [], 0)[0]:
                return None
            chunk = os.read(stdout.fileno(), 4096)
            if not chunk:
                raise EOFError("the launch helper died")
            self._pending += chunk
        line, self._pending = self._pending.split(b"\n", 1)
        return json.loads(line)

    def alive(self) -> bool:
        return self.process.poll() is None

    def close(self) -> None:
        """Close its pipes (it kills whatever runs under it and exits) and reap it."""
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                pipe.close()
        self.process.wait()


class _IdleHelpers:
    """The helpers waiting for the next launch."""

    def __init__(self) -> None:
        self._idle: list[LaunchHelper] = []
        self._lock = threading.Lock()

    def take(self) -> LaunchHelper:
        """An idle helper that is still alive, else a new one."""
        with self._lock:
            while self._idle:
                helper = self._idle.pop()
                if helper.alive():
                    return helper
                helper.close()
        return LaunchHelper()

    def give_back(self, helper: LaunchHelper) -> None:
        with self._lock:
            self._idle.append(helper)

    def close_all(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for helper in idle:
            helper.close()

    def forget(self) -> None:
        """In a forked child: the helpers and their pipes are the parent's."""
        self._idle, self._lock = [], threading.Lock()


_IDLE = _IdleHelpers()  # process state by nature: the helpers outlive every single launch
atexit.register(_IDLE.close_all)
os.register_at_fork(after_in_child=_IDLE.forget)
take = _IDLE.take
give_back = _IDLE.give_back
