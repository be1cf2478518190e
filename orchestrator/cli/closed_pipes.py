"""A reader that leaves never changes what a command does: ``shasweep report latest | head -1`` still
writes its report and exits with the verdict's code, and a sweep piped into ``head`` still runs to
its end and records it.

While a command runs, ``sys.stdout`` and ``sys.stderr`` write through ``PipeTolerantStream``: the
first write that finds its pipe closed (``BrokenPipeError``) points the file descriptor at
``/dev/null`` (so later writes, the interpreter's last flush and child processes sharing it succeed)
and every later write is dropped. Rich consoles write through ``sys.stdout`` too, so their own
closed-pipe exit (``SystemExit(1)``) never happens.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO


class PipeTolerantStream:
    """A text stream whose writes never raise ``BrokenPipeError``; everything else is the stream's."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self.reader_gone = False

    def write(self, text: str) -> int:
        if not self.reader_gone:
            try:
                return self._stream.write(text)
            except BrokenPipeError:
                self._reader_left()
        return len(text)

    def flush(self) -> None:
        if not self.reader_gone:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._reader_left()

    def __getattr__(self, name: str) -> object:
        return getattr(self._stream, name)

    def _reader_left(self) -> None:
        self.reader_gone = True
        try:
            fd = self._stream.fileno()
        except (OSError, ValueError):  # not a real file (a test's capture): nothing to redirect
            return
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, fd)
        finally:
            os.close(devnull)
        try:
            self._stream.flush()  # what was buffered for the gone reader goes to /dev/null
        except OSError:
            pass


@contextmanager
def tolerate_closed_pipes() -> Iterator[None]:
    """``sys.stdout`` and ``sys.stderr`` wrapped in ``PipeTolerantStream`` inside the block."""
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = PipeTolerantStream(saved[0]), PipeTolerantStream(saved[1])  # type: ignore[assignment]
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
