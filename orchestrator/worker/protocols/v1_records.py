"""Run protocol v1's records (docs/design.md, "Run protocol (v1)"): ``StreamState`` validates and
accumulates the NDJSON records of one bench stream, line by line, as the reader tails it; its steps
go to a ``StepLog`` (the reader's: bounded memory), at most ``max_steps`` of them."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field

from orchestrator.contract import PROTOCOL_VERSION, StepRecord
from orchestrator.errors import ProtocolError
from orchestrator.store.step_log import StepLog
from orchestrator.worker.protocols import surrogates

MAX_PHASES = 256  # phase timings one step may report (each becomes rows and, as a mean, a column)


@dataclass
class StreamState:
    """Everything read from one bench stream so far."""

    header: dict | None = None
    steps: StepLog = field(default_factory=StepLog)
    max_steps: int | None = None  # more steps than this is a protocol error (the sweep's max_steps)
    summary: dict | None = None
    error: dict | None = None
    lines_read: int = 0
    # the control channel (lockstep): block records, and each block's phase sums from its tagged steps
    blocks: list[dict] = field(default_factory=list)
    block_phase_sums: dict[int, dict[str, float]] = field(default_factory=dict)

    def feed(self, line: str) -> dict | None:
        """Parse and store one line; returns the record, or None for a blank or unknown-kind line.

        Raises ``ProtocolError`` for anything a reader could misread: malformed JSON, a record that
        is not an object, a step before the header, a protocol version other than 1.
        """
        self.lines_read += 1
        text = line.strip()
        if not text:
            return None
        try:
            record = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ProtocolError(f"{self._where()} is not valid JSON ({exc}): {text[:200]!r}") from None
        except RecursionError:
            raise ProtocolError(f"{self._where()} is nested too deeply to parse: {text[:200]!r}") from None
        if not isinstance(record, dict):
            raise ProtocolError(f"{self._where()} is not a JSON object: {text[:200]!r}")
        if surrogates.may_hold(text):
            record = surrogates.escaped(record)  # a lone one no file could store, written as its escape
        kind = record.get("kind")
        handler = self.handler(kind) if isinstance(kind, str) else None
        if handler is None:
            return None
        handler(self, record)
        return record

    def handler(self, kind: str) -> Callable[[StreamState, dict], None] | None:
        """What takes a record of ``kind`` (None: a kind this reader does not know, ignored)."""
        return _HANDLERS.get(kind)

    def ended_early(self, name: str) -> str | None:
        """Why the process ``name`` can no longer give what it was asked (a suite's failed case), or None."""
        return None

    def _on_header(self, record: dict) -> None:
        if self.header is not None:
            raise ProtocolError(f"{self._where()}: a second header record")
        version = record.get("protocol")
        if version != PROTOCOL_VERSION:
            raise ProtocolError(
                f"bench speaks run protocol {version!r}; this shasweep reads protocol {PROTOCOL_VERSION}")
        self.header = record

    def _on_step(self, record: dict) -> None:
        self._require_header("step")
        phases = record.get("phases")
        if not isinstance(record.get("step"), int) or not isinstance(phases, dict):
            raise ProtocolError(f"{self._where()}: a step record needs an integer 'step' "
                                f"and a 'phases' object, got {record!r:.200}")
        if len(phases) > MAX_PHASES:
            raise ProtocolError(f"{self._where()}: {len(phases)} phases in one step; at most {MAX_PHASES}")
        try:
            ms = {str(name): float(value) for name, value in phases.items()}
        except (TypeError, ValueError):
            raise ProtocolError(f"{self._where()}: non-numeric phase timing in {phases!r:.200}") from None
        _check_timings(ms, f"{self._where()} (step {record['step']})")
        last = self.steps.last
        if last is not None and record["step"] <= last.step:
            raise ProtocolError(f"{self._where()}: step {record['step']} does not follow step "
                                f"{last.step} (step numbers must increase)")
        if self.max_steps is not None and len(self.steps) >= self.max_steps:
            raise ProtocolError(f"{self._where()}: the bench reported more than max_steps={self.max_steps} "
                                "steps (the sweep key max_steps)")
        warmup = bool(record.get("warmup", False))
        self.steps.append(StepRecord(step=record["step"], warmup=warmup, phases=ms))
        if isinstance(block := record.get("block"), int) and not isinstance(block, bool):
            sums = self.block_phase_sums.setdefault(block, {})
            for name, value in ms.items():
                sums[name] = sums.get(name, 0.0) + value

    def _on_block(self, record: dict) -> None:
        self._require_header("block")
        numbers = {key: record.get(key) for key in ("block", "steps")}
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in numbers.values()):
            raise ProtocolError(f"{self._where()}: a block record needs integer 'block' and 'steps', "
                                f"got {record!r:.200}")
        wall = record.get("wall_s")
        if isinstance(wall, bool) or not isinstance(wall, int | float):
            raise ProtocolError(f"{self._where()}: a block record needs a number 'wall_s', "
                                f"got {record!r:.200}")
        _check_timings({"wall_s": float(wall)}, f"{self._where()} (block {record['block']})")
        _check_clock(record, f"{self._where()} (block {record['block']})")
        self.blocks.append(record)

    def _on_summary(self, record: dict) -> None:
        self._require_header("summary")
        means = record.get("phase_means_ms")
        numbers = {name: value for name, value in (means.items() if isinstance(means, dict) else ())
                   if isinstance(value, int | float) and not isinstance(value, bool)}
        if isinstance(record.get("throughput"), int | float):
            numbers["throughput"] = record["throughput"]
        _check_timings(numbers, f"{self._where()} (summary)")
        self.summary = record

    def _on_error(self, record: dict) -> None:
        self.error = record

    def _require_header(self, kind: str) -> None:
        if self.header is None:
            raise ProtocolError(f"{self._where()}: a {kind} record before the header")

    def _where(self) -> str:
        return f"stream line {self.lines_read}"

    def error_message(self) -> str | None:
        """The bench's own error record as 'Type: message', if it sent one."""
        if self.error is None:
            return None
        kind = self.error.get("type") or "error"
        return f"{kind}: {self.error.get('message', '')}"


def valid_time(value: object) -> bool:
    """A finite, non-negative number (not a bool): a time or a rate a bench may report."""
    number = isinstance(value, int | float) and not isinstance(value, bool)
    return number and math.isfinite(value) and value >= 0  # type: ignore[arg-type]


def _check_timings(values: dict[str, float], where: str) -> None:
    """A timing (or throughput) that is negative, NaN or infinite is a broken bench, never a number."""
    bad = [f"{name}={value!r}" for name, value in values.items() if not (math.isfinite(value) and value >= 0)]
    if bad:
        raise ProtocolError(f"{where}: negative, NaN or infinite values: {', '.join(bad[:5])}")


def _check_clock(record: dict, where: str) -> None:
    """A block's ``started``/``ended`` (epoch seconds) are finite numbers where given: the timeline and
    the overlap check place every block on one clock, and the stored blocks must be JSON."""
    bad = [f"{key}={value!r}" for key in ("started", "ended") if (value := record.get(key)) is not None
           and (isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value))]
    if bad:
        raise ProtocolError(f"{where}: not a finite number of epoch seconds: {', '.join(bad)}")


_HANDLERS: dict[str, Callable[[StreamState, dict], None]] = {
    "header": StreamState._on_header,
    "step": StreamState._on_step,
    "summary": StreamState._on_summary,
    "error": StreamState._on_error,
    "block": StreamState._on_block,
}
