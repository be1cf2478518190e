"""Tailing a file a bench writes while it runs (protocol v1's stream): ``follow_lines`` yields each
complete line as soon as it lands."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

from orchestrator.errors import ProtocolError
from orchestrator.worker.safe_files import NotRegularFileError, open_regular

MAX_LINE_BYTES = 64 * 2**20  # one stream record
READ_CHUNK_BYTES = 2**20


def follow_lines(path: Path, finished: Callable[[], bool], poll_s: float = 0.02) -> Iterator[str]:
    """Yield complete lines appended to ``path`` until ``finished()`` and the file is drained.

    The file may not exist yet (the bench creates it); a last line without a newline is yielded
    once the writer has finished. It is read only if it is a regular file (``worker.safe_files``:
    a FIFO, link or device there is a ``ProtocolError``), ``READ_CHUNK_BYTES`` at a time, so
    ``finished`` is asked between chunks; a line longer than ``MAX_LINE_BYTES`` is a ``ProtocolError``.
    """
    pending = bytearray()
    stream = None
    try:
        while True:
            done = finished()  # sample before reading so nothing written before exit is missed
            if stream is None:
                stream = _open_stream(path)  # closed in finally
            chunk = stream.read(READ_CHUNK_BYTES) if stream is not None else b""
            if b"\n" in chunk:
                first, *lines, rest = chunk.split(b"\n")
                pending += first
                yield pending.decode("utf-8", errors="replace")
                for line in lines:
                    yield line.decode("utf-8", errors="replace")
                pending = bytearray(rest)
            else:
                pending += chunk
            if len(pending) > MAX_LINE_BYTES:
                raise ProtocolError(f"a stream line is longer than {MAX_LINE_BYTES} bytes ({path})")
            if len(chunk) == READ_CHUNK_BYTES:
                continue  # more is waiting: read it before asking finished() again
            if done:
                if pending:
                    yield pending.decode("utf-8", errors="replace")
                return
            if not chunk:
                time.sleep(poll_s)
    finally:
        if stream is not None:
            stream.close()


def _open_stream(path: Path) -> BinaryIO | None:
    try:
        return open_regular(path)
    except NotRegularFileError as exc:
        raise ProtocolError(f"the bench's stream {exc}") from None
