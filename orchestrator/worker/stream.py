"""Tailing a file a bench writes while it runs (protocol v1's stream): ``LineTail`` hands out the
complete lines appended since the last look; ``follow_lines`` yields each as soon as it lands."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

READ_CHUNK_BYTES = 2**20  # what follow_lines reads at a time


class LineTail:
    """Complete lines appended to a file since the last look (the file may not exist yet)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file = None
        self._pending = b""
        self.drained = True  # the last look read everything there was

    def lines(self, final: bool = False, limit: int | None = None) -> list[str]:
        """The new complete lines, of at most ``limit`` bytes read (None: all there is; ``drained``
        says whether that was all); ``final`` (the writer is gone): once drained, a last
        unterminated line too."""
        if self._file is None and self.path.exists():
            self._file = open(self.path, "rb")  # noqa: SIM115 - closed by close()
        chunk = b""
        if self._file is not None:
            chunk = self._file.read(-1 if limit is None else limit)
        self.drained = limit is None or len(chunk) < limit
        self._pending += chunk
        *lines, self._pending = self._pending.split(b"\n")
        if final and self.drained and self._pending:
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
    once the writer has finished. It is read ``READ_CHUNK_BYTES`` at a time, so a bench far ahead of
    its reader costs the reader no more memory than that.
    """
    tail = LineTail(path)
    try:
        while True:
            done = finished()  # sample before reading so nothing written before exit is missed
            lines = tail.lines(final=done, limit=READ_CHUNK_BYTES)
            yield from lines
            if not tail.drained:
                continue  # more is waiting: read it before asking finished() again
            if done:
                return
            if not lines:
                time.sleep(poll_s)
    finally:
        tail.close()
