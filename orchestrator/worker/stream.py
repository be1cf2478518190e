"""Tailing a file a bench writes while it runs (protocol v1's stream): ``follow_lines`` yields each
complete line as soon as it lands."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

READ_CHUNK_BYTES = 2**20


def follow_lines(path: Path, finished: Callable[[], bool], poll_s: float = 0.02) -> Iterator[str]:
    """Yield complete lines appended to ``path`` until ``finished()`` and the file is drained.

    The file may not exist yet (the bench creates it); a last line without a newline is yielded
    once the writer has finished. It is read ``READ_CHUNK_BYTES`` at a time, so a bench far ahead of
    its reader costs the reader no more memory than that.
    """
    pending = b""
    stream = None
    try:
        while True:
            done = finished()  # sample before reading so nothing written before exit is missed
            if stream is None and path.exists():
                stream = open(path, "rb")  # closed in finally
            chunk = stream.read(READ_CHUNK_BYTES) if stream is not None else b""
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                yield line.decode("utf-8", errors="replace")
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
