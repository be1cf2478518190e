"""The suite channel's ends in a suite's process (docs/design.md, "Suites in lockstep"): the worker's
commands, one at a time, from its control FIFO, and records to the run's stream, both as the bench
helper's channel (``benchkit.channel``) reads and writes them.

The worker holds the FIFO open for reading and writing, so opening it here never blocks; end of file
(the worker closed it, or died) reads as ``{"cmd": "end"}``.
"""

from __future__ import annotations

import math
from typing import Any

from orchestrator.benchkit.channel import RecordWriter, read_commands

SUITE_VERSION = 1  # the header's "suite": this process serves many cases (the suite channel)
END = {"cmd": "end"}
MESSAGE_CHARS = 2000  # of a failure's text in a record


class ChannelError(Exception):
    """A command this process cannot obey."""


def finite_time(value: object) -> bool:
    """A time a step may report: a finite number >= 0 (not a bool)."""
    number = isinstance(value, int | float) and not isinstance(value, bool)
    return number and math.isfinite(value) and value >= 0


class Channel:
    """Reads the worker's commands from ``control`` and writes records to ``stream``."""

    def __init__(self, control: str, stream: str) -> None:
        self._file = open(stream, "w", encoding="utf-8")
        self._writer = RecordWriter(self._file)
        self._commands = read_commands(control)

    def write(self, **record: Any) -> None:
        self._writer.write(**record)

    def command(self) -> dict:
        """The next command (blocks until one arrives); ``END`` at end of file."""
        try:
            return next(self._commands, END)
        except ValueError as exc:
            raise ChannelError(str(exc)) from None

    def close(self) -> None:
        self._file.close()
        self._commands.close()
