"""Run protocol v1 (docs/design.md "Run protocol"): NDJSON records written to the ``--stream`` path,
and the lockstep control channel's commands read from ``--control``.

Every record is one ``json.dumps`` + one write + one flush, so a reader on a FIFO sees each
record as soon as it exists and a crash never loses the records already written.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import Any, Self, TextIO

PROTOCOL_VERSION = 1
CONTROL_VERSION = 1  # the header's "control": this bench takes its steps from the control channel
TRACEBACK_TAIL_LINES = 20


def _is_stdout(fd: int) -> bool:
    try:
        return os.path.samestat(os.fstat(fd), os.fstat(sys.__stdout__.fileno()))
    except (OSError, AttributeError, ValueError):  # stdout closed or absent
        return False


class StreamWriter:
    """Writes run-protocol records to a file or FIFO (never stdout)."""

    def __init__(self, path: str | Path) -> None:
        """Open ``path`` for writing; ValueError if it is this process's stdout."""
        self._file: TextIO = open(path, "w", encoding="utf-8")  # closed by close()
        if _is_stdout(self._file.fileno()):
            self._file.close()
            raise ValueError(f"--stream {str(path)!r} is stdout; records never go to stdout")

    def write(self, record: dict[str, Any]) -> None:
        """Write one record as a line and flush it."""
        self._file.write(json.dumps(record) + "\n")
        self._file.flush()

    def header(self, case: dict[str, str], params: dict[str, int | str], audit: dict[str, Any],
               control: bool = False) -> None:
        """The header; ``control``: declare that the bench takes its steps from the control channel."""
        record = {"kind": "header", "protocol": PROTOCOL_VERSION, "case": case, "params": params,
                  "audit": audit}
        self.write(record | ({"control": CONTROL_VERSION} if control else {}))

    def step(self, step: int, warmup: bool, phases: dict[str, float], resets: int,
             block: int | None = None) -> None:
        record = {"kind": "step", "step": step, "warmup": warmup, "phases": phases, "resets": resets}
        self.write(record if block is None else record | {"block": block})

    def block(self, block: int, steps: int, wall_s: float, warmup: bool, started: float,
              ended: float) -> None:
        """The end of a commanded block: its steps, its wall seconds, and when it ran (epoch seconds)."""
        self.write({"kind": "block", "block": block, "steps": steps, "wall_s": wall_s, "warmup": warmup,
                    "started": started, "ended": ended})

    def summary(self, throughput: float, measure_wall_s: float, phase_means_ms: dict[str, float],
                **extra: Any) -> None:
        self.write({"kind": "summary", "throughput": throughput, "measure_wall_s": measure_wall_s,
                    "phase_means_ms": phase_means_ms, **extra})

    def error(self, exc: BaseException, with_traceback: bool) -> None:
        """Write an ``error`` record; ``with_traceback`` adds the last lines of the traceback."""
        record: dict[str, Any] = {"kind": "error", "type": type(exc).__name__, "message": str(exc)}
        if with_traceback:
            lines = "".join(traceback.format_exception(exc)).splitlines()
            record["traceback"] = "\n".join(lines[-TRACEBACK_TAIL_LINES:])
        self.write(record)

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def control_commands(path: str | Path) -> Iterator[tuple[int, int, bool]]:
    """``(block, steps, warmup)`` of each ``run`` command read from the control FIFO at ``path``, until
    ``end`` or end-of-file; blocks while none is waiting. ValueError for anything else."""
    with open(path, encoding="utf-8") as channel:
        for line in channel:
            if not line.strip():
                continue
            command = json.loads(line)
            if not isinstance(command, dict) or command.get("cmd") not in ("run", "end"):
                raise ValueError(f"unknown control command {line.strip()[:200]!r}")
            if command["cmd"] == "end":
                return
            yield int(command["block"]), int(command["steps"]), bool(command.get("warmup", False))
