"""What a resident bench process and the worker say to each other (docs/design.md, "Run protocol
(v1)" and "The control channel (lockstep)"): the commands read from the control FIFO, and the
NDJSON records written to the stream. The bench helper (``benchkit.bench``) speaks it, and so must
every other in-process driver of a bench (a suite's plugin): the standard library only, so that
importing it costs a bench nothing.
"""

from __future__ import annotations

import json
import os
import re
import stat
import traceback
from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple, TextIO

PROTOCOL_VERSION = 1  # the header's "protocol"
CONTROL_VERSION = 1  # the header's "control": this process obeys the control channel
MAX_COMMAND_BYTES = 256 * 2**20  # a spilled command's file: at most the worker's own limit


class RunCommand(NamedTuple):
    """``{"cmd": "run", ...}``: run exactly ``steps`` steps as block ``block``."""

    block: int
    steps: int
    warmup: bool


def read_commands(path: str) -> Iterator[dict]:
    """Every command read from the control FIFO at ``path`` (one JSON object with a text ``cmd`` a
    line), until end-of-file; blocks while none is waiting. A command too long for one atomic FIFO
    write comes as an envelope naming the file beside the FIFO that holds it (``spilled_command``).
    Anything else raises ValueError."""
    with open(path, encoding="utf-8") as channel:
        for line in channel:
            if not line.strip():
                continue
            command = _command(line)
            if command is not None and "spilled" in command:
                command = spilled_command(path, command)
            if command is None:
                raise ValueError(f"unknown control command {line.strip()[:200]!r}")
            yield command


def _command(text: str | bytes) -> dict | None:
    """The command ``text`` holds: a JSON object with a text ``cmd``; None for anything else."""
    try:
        command = json.loads(text)
    except (ValueError, RecursionError):  # not JSON, not UTF-8, nested beyond the parser
        return None
    return command if isinstance(command, dict) and isinstance(command.get("cmd"), str) else None


def spilled_command(path: str, envelope: dict) -> dict:
    """The command of ``envelope`` (``{"cmd": c, "spilled": name, "bytes": n}``): the file ``name``
    beside the FIFO at ``path``, named ``<fifo>.<number>.json``, a regular file (never a link) of
    exactly ``n`` bytes, at most ``MAX_COMMAND_BYTES``, holding one command whose ``cmd`` is ``c``;
    ValueError naming what is wrong otherwise."""
    directory, fifo = os.path.split(path)
    name, size = envelope.get("spilled"), envelope.get("bytes")
    if not isinstance(name, str) or not re.fullmatch(re.escape(fifo) + r"\.[0-9]{1,9}\.json", name):
        raise ValueError(f"a spilled control command names {str(name)[:200]!r}, not a file of its FIFO")
    if type(size) is not int or not 0 < size <= MAX_COMMAND_BYTES:
        raise ValueError(f"spilled control command {name}: its size {str(size)[:50]!r} is not 1.."
                         f"{MAX_COMMAND_BYTES} bytes")
    try:
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC  # a FIFO or link is refused
        fd = os.open(os.path.join(directory, name), flags)
    except OSError as exc:
        raise ValueError(f"spilled control command {name}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as file:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError(f"spilled control command {name} is not a regular file")
        data = file.read(size + 1)
    command = _command(data) if len(data) == size else None
    if command is None or command["cmd"] != envelope["cmd"] or "spilled" in command:
        raise ValueError(f"spilled control command {name} does not hold the {envelope['cmd']!r} command of "
                         f"{size} bytes its envelope announced")
    return command


def control_commands(path: str) -> Iterator[RunCommand]:
    """Each ``run`` command read from the control FIFO at ``path``, until ``end`` or end-of-file; blocks
    while none is waiting. Anything else raises ValueError."""
    for command in read_commands(path):
        if command["cmd"] not in ("run", "end"):
            raise ValueError(f"unknown control command {json.dumps(command)[:200]!r}")
        if command["cmd"] == "end":
            return
        yield RunCommand(int(command["block"]), int(command["steps"]), bool(command.get("warmup", False)))


class RecordWriter:
    """The records of one run, each a line flushed at once (the worker tails the stream)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, **record: Any) -> None:
        self.stream.write(json.dumps(record) + "\n")
        self.stream.flush()

    def header(self, case: Mapping[str, str], params: Mapping[str, Any], audit: Mapping[str, Any], *,
               control: bool) -> None:
        """``control``: this process takes its blocks from the control channel (``"control": 1``)."""
        extra = {"control": CONTROL_VERSION} if control else {}
        self.write(kind="header", protocol=PROTOCOL_VERSION, case=dict(case), params=dict(params),
                   audit=dict(audit), **extra)

    def step(self, step: int, phases: Mapping[str, float], *, warmup: bool, block: int | None) -> None:
        tag = {} if block is None else {"block": block}
        self.write(kind="step", step=step, warmup=warmup, phases=dict(phases), **tag)

    def block(self, command: RunCommand, wall_s: float, started: float, ended: float) -> None:
        """The end of a commanded block: ``wall_s`` on the monotonic clock, ``started``/``ended`` epoch
        seconds."""
        self.write(kind="block", block=command.block, steps=command.steps, wall_s=wall_s,
                   warmup=command.warmup, started=started, ended=ended)

    def summary(self, throughput: float, measure_wall_s: float, phase_means_ms: Mapping[str, float]) -> None:
        self.write(kind="summary", throughput=throughput, measure_wall_s=measure_wall_s,
                   phase_means_ms=dict(phase_means_ms))

    def error(self, exc: BaseException) -> None:
        tail = "".join(traceback.format_exception(exc)).splitlines()[-20:]
        self.write(kind="error", type=type(exc).__name__, message=str(exc), traceback="\n".join(tail))
