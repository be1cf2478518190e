"""Tailing a file a bench writes while it runs (protocol v1's stream): ``LineTail`` hands out the
complete lines appended since the last look; ``follow_lines`` yields each as soon as it lands.

The file is read only if it is a regular file (``worker.safe_files``: a FIFO, a link or a device
there is a ``ProtocolError``, never a blocked or endless read), ``READ_CHUNK_BYTES`` at a time, and a
line longer than ``MAX_LINE_BYTES`` is a ``ProtocolError``. A bench can write far faster than its
lines are parsed (a gigabyte of blank lines in a second), so a reader takes a chunk at a time and
asks its deadline between chunks: ``follow_lines`` stops at ``give_up`` with the rest unread.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

from orchestrator.errors import ProtocolError
from orchestrator.worker.safe_files import NotRegularFileError, open_regular

READ_CHUNK_BYTES = 2**20  # what follow_lines reads at a time
MAX_LINE_BYTES = 64 * 2**20  # one stream record


class LineTail:
    """Complete lines appended to a file since the last look (the file may not exist yet)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: BinaryIO | None = None
        self._pending = bytearray()
        self.drained = True  # the last look read everything there was

    @property
    def offset(self) -> int:
        """The bytes read so far (an unfinished last line included)."""
        return 0 if self._file is None else self._file.tell()

    def size(self) -> int:
        """The file's size now (0 before it exists)."""
        return 0 if self._file is None else os.fstat(self._file.fileno()).st_size

    def lines(self, final: bool = False, limit: int | None = None) -> list[str]:
        """The new complete lines, of at most ``limit`` bytes read (None: all there is, a chunk at a
        time; ``drained`` says whether that was all); ``final`` (the writer is gone): once drained, a
        last unterminated line too."""
        if self._file is None:
            self._file = _open_stream(self.path)
        found: list[bytes] = []
        read, self.drained = 0, True
        while self._file is not None:
            size = READ_CHUNK_BYTES if limit is None else min(READ_CHUNK_BYTES, limit - read)
            chunk = self._file.read(size)
            read += len(chunk)
            found += self._split(chunk)
            if len(chunk) < size:
                break
            if limit is not None and read >= limit:
                self.drained = False
                break
        if final and self.drained and self._pending:
            found.append(bytes(self._pending))
            self._pending = bytearray()
        return [line.decode("utf-8", errors="replace") for line in found]

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def _split(self, chunk: bytes) -> list[bytes]:
        """The lines ``chunk`` completes; the rest is kept, at most ``MAX_LINE_BYTES`` of it."""
        if b"\n" not in chunk:
            self._pending += chunk
            lines = []
        else:
            first, *rest, last = chunk.split(b"\n")
            lines = [bytes(self._pending + first), *rest]
            self._pending = bytearray(last)
        if len(self._pending) > MAX_LINE_BYTES:
            raise ProtocolError(f"a stream line is longer than {MAX_LINE_BYTES} bytes ({self.path})")
        return lines


class StreamAbandoned(Exception):
    """``follow_lines`` gave up (its deadline or a cancel) with more of the stream left to read."""


def follow_lines(path: Path, finished: Callable[[], bool], give_up: Callable[[], bool] = lambda: False,
                 poll_s: float = 0.02) -> Iterator[str]:
    """Yield complete lines appended to ``path`` until ``finished()`` and the file is drained.

    The file may not exist yet (the bench creates it); a last line without a newline is yielded
    once the writer has finished. It is read ``READ_CHUNK_BYTES`` at a time, so a bench far ahead of
    its reader costs the reader no more memory than that; between two chunks ``give_up()`` is asked,
    and when it says so the rest stays unread (``StreamAbandoned``).
    """
    tail = LineTail(path)
    try:
        while True:
            done = finished()  # sample before reading so nothing written before exit is missed
            lines = tail.lines(final=done, limit=READ_CHUNK_BYTES)
            yield from lines
            if not tail.drained:
                if give_up():
                    raise StreamAbandoned(f"{tail.size() - tail.offset} bytes of {path} left unread")
                continue  # more is waiting: read it before asking finished() again
            if done:
                return
            if not lines:
                time.sleep(poll_s)
    finally:
        tail.close()


def _open_stream(path: Path) -> BinaryIO | None:
    try:
        return open_regular(path)
    except NotRegularFileError as exc:
        raise ProtocolError(f"the bench's stream {exc}") from None
