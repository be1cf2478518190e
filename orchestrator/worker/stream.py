"""Tailing a file a bench writes while it runs (protocol v1's stream): ``LineTail`` hands out the
complete lines appended since the last look; ``follow_lines`` yields each as soon as it lands."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path


class LineTail:
    """Complete lines appended to a file since the last look (the file may not exist yet)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file = None
        self._pending = b""

    def lines(self, final: bool = False) -> list[str]:
        """The new complete lines; ``final`` (the writer is gone): a last unterminated line too."""
        if self._file is None and self.path.exists():
            self._file = open(self.path, "rb")  # noqa: SIM115 - closed by close()
        if self._file is not None:
            self._pending += self._file.read()
        *lines, self._pending = self._pending.split(b"\n")
        if final and self._pending:
            lines.append(self._pending)
            self._pending = b""
        return [line.decode("utf-8", errors="replace") for line in lines]

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def follow_lines(path: Path, finished: Callable[[], bool], poll_s: float = 0.02) -> Iterator[str]:
    """Yield complete lines appended to ``path`` until ``finished()`` and the file is drained.

    The file may not exist yet (the bench creates it); a last line without a newline is yielded
    once the writer has finished.
    """
    tail = LineTail(path)
    try:
        while True:
            done = finished()  # sample before reading so nothing written before exit is missed
            lines = tail.lines(final=done)
            yield from lines
            if done:
                return
            if not lines:
                time.sleep(poll_s)
    finally:
        tail.close()
