"""The worker's end of a bench's control FIFO (docs/design.md, "The control channel"): commands
written without ever blocking, each whole or not at all, in the order sent.

A FIFO write is atomic only up to ``select.PIPE_BUF`` bytes, so a longer command (a suite's list of
many long case names, a case named with more than a few kB) travels in a file beside the FIFO: its
JSON is written first, to ``<fifo>.<n>.json`` (mode 0600, created new), and the FIFO carries a short
envelope naming it, ``{"cmd": ..., "spilled": "<fifo>.<n>.json", "bytes": size}``, which the bench
side (``benchkit.channel.read_commands``) replaces by the file's command. The files go with the
channel (``close``).
"""

from __future__ import annotations

import json
import os
import select
from pathlib import Path

# The largest command the channel carries (a bench side refuses a larger spilled file): a suite's
# ``cases`` is at most its header's case list, itself one stream line of at most 64 MiB, and JSON's
# escapes may triple non-ASCII text.
MAX_COMMAND_BYTES = 256 * 2**20


class CommandTooLarge(ValueError):
    """A command over ``MAX_COMMAND_BYTES``."""


class ControlChannel:
    """The worker's end of a bench's control FIFO (mode 0600), held open read-write so that no open
    ever blocks and the bench reads end-of-file only once it is closed. Written without blocking: what
    goes into the FIFO fits the pipe's atomic size, so it is written whole or not at all (the FIFO is
    full); a longer command is spilled to a file first (see the module docstring)."""

    def __init__(self, path: Path) -> None:
        path.unlink(missing_ok=True)
        os.mkfifo(path, 0o600)
        self.path = path
        self._fd: int | None = os.open(path, os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
        self._spilled: list[Path] = []
        self._unsent: tuple[bytes, bytes] | None = None  # (command, what carries it) the FIFO had no room for

    def try_send(self, command: dict) -> bool:
        """Write ``command``; False when the FIFO has no room for it (nothing written: call again with
        the same command, which is not spilled again). CommandTooLarge over ``MAX_COMMAND_BYTES``."""
        if self._fd is None:
            raise RuntimeError(f"control channel {self.path} is closed")
        line = (json.dumps(command) + "\n").encode()
        if self._unsent is not None and self._unsent[0] == line:
            data = self._unsent[1]
        else:
            data = line if len(line) <= select.PIPE_BUF else self._spill(line, command.get("cmd"))
        try:
            os.write(self._fd, data)
        except BlockingIOError:
            self._unsent = (line, data)
            return False
        self._unsent = None
        return True

    def _spill(self, line: bytes, cmd: object) -> bytes:
        """Write the command ``line`` to a new file beside the FIFO; the envelope naming it."""
        if len(line) > MAX_COMMAND_BYTES:
            raise CommandTooLarge(f"a {cmd!r} command of {len(line)} bytes is over the control channel's "
                                  f"{MAX_COMMAND_BYTES // 2**20} MiB")
        spill = self.path.with_name(f"{self.path.name}.{len(self._spilled)}.json")
        spill.unlink(missing_ok=True)  # an earlier bench's of this run key
        fd = os.open(spill, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        self._spilled.append(spill)
        with os.fdopen(fd, "wb") as file:
            file.write(line)
        return (json.dumps({"cmd": cmd, "spilled": spill.name, "bytes": len(line)}) + "\n").encode()

    def close(self) -> None:
        """Close the FIFO; remove it and every spilled file."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        self.path.unlink(missing_ok=True)
        for spill in self._spilled:
            spill.unlink(missing_ok=True)
        self._unsent = None
