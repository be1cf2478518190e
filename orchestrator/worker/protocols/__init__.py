"""The run protocols: how the bench task reads one bench run (docs/design.md, "Protocols").

Every protocol is a ``BenchReader``: the bench task renders the command, then calls ``execute`` with
a ``start`` that launches one process of it (``worker.proc.launch``: logs, CPU pinning, the host
lock's marker) and a ``StopSignal``; after the last process exited 0, ``complete`` reads what the
bench left behind. ``header``, ``summary`` and ``steps`` are then what the store writes; the steps
go to a ``StepLog`` as they arrive (bounded memory: its spool is in the run's log directory), at
most the sweep's ``max_steps`` of them. What a reader can do is declared in
``orchestrator.capabilities`` (``info``), whose registry also names each protocol's reader
(``reader_class``): the built-in ones in this package, others in the packages that register them.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar, Protocol

from orchestrator.capabilities import Capability, ProtocolInfo, UnknownProtocolError, describe, plugin_of
from orchestrator.contract import PlannedRun, RunResult, StepRecord
from orchestrator.store.step_log import StepLog
from orchestrator.worker.proc import BenchProcess

STEP_SPOOL = "steps.spool.parquet"  # in the run's log directory
Start = Callable[[], BenchProcess]
OnStep = Callable[[StepRecord, int], None]  # (the step, how many steps so far)


class StopSignal(Protocol):
    """When to stop waiting for the bench: it exited, timed out or the sweep was cancelled."""

    def should_stop(self, proc: BenchProcess) -> bool: ...

    def expired(self) -> bool: ...


class BenchReader(ABC):
    """What one protocol does between rendering the command and the run's verdict."""

    protocol: ClassVar[str]  # its name in ``orchestrator.capabilities``

    def __init__(self, run: PlannedRun, log_dir: Path) -> None:
        self.run = run
        self.stream_path = log_dir / "stream.jsonl"  # {stream}
        self.result_path = log_dir / "result.json"  # {result}
        self.header: dict | None = None
        self.summary: dict | None = None  # throughput, measure_wall_s, phase_means_ms, metrics
        self.steps = StepLog(spool=log_dir / STEP_SPOOL, sweep_id=run.sweep_id, run_key=run.run_key)
        self.bad_input: str | None = None  # why the sweep's input failed the run (exit 2 at the client)
        self.abandoned = False  # stopped reading at the deadline or a cancel with output left unread
        self.on_record: Callable[[dict | None], None] = lambda record: None  # each streamed record, in order
        for path in (self.stream_path, self.result_path):
            path.unlink(missing_ok=True)

    @property
    def info(self) -> ProtocolInfo:
        """The protocol's declaration under this run's settings (``capabilities.describe``)."""
        return describe(self.protocol, self.run.json_mapping)

    def has(self, capability: Capability) -> bool:
        return self.info.has(capability)

    @property
    def total_steps(self) -> int | None:
        """How many steps the run will report, when known in advance (for progress)."""
        return None

    @abstractmethod
    def execute(self, start: Start, stop: StopSignal, on_step: OnStep) -> str | None:
        """Run the command to its end or until ``stop``; a protocol error, or None."""

    def bench_error(self) -> str | None:
        """The bench's own account of a failure, when its protocol carries one."""
        return None

    def complete(self) -> str | None:
        """After a clean exit: read what the bench left; why it is unusable, or None."""
        return None

    def with_cases(self, result: RunResult) -> RunResult:
        """An ok suite run's ``result`` with its ``cases`` (``MANY_CASES`` readers); others: as is."""
        return result

    def reported_peak_rss_mib(self) -> float | None:
        """The bench's own account of its peak RSS, when its protocol carries one."""
        return None


def too_many_steps(run: PlannedRun, steps: int) -> str | None:
    """Why ``steps`` steps are more than ``run`` may report (the sweep's ``max_steps``), or None."""
    if run.max_steps is None or steps <= run.max_steps:
        return None
    return f"the bench reported more than max_steps={run.max_steps} steps (the sweep key max_steps)"


def int_param(params: dict, name: str, default: int) -> int:
    try:
        return int(params.get(name, default))
    except (TypeError, ValueError):
        return default


def reader_class(protocol: str) -> type[BenchReader]:
    """The reader of ``protocol``, imported from where its ``capabilities.ProtocolPlugin`` says (a
    built-in module here, or a package's); ``UnknownProtocolError`` when the protocol is not
    registered on this host or its reader is not a ``BenchReader`` of that protocol."""
    plugin = plugin_of(protocol)
    module, _, name = plugin.reader.partition(":")
    try:
        found = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise UnknownProtocolError(f"protocol {protocol!r}: its reader {plugin.reader} does not load: "
                                   f"{type(exc).__name__}: {exc}") from None
    if not (isinstance(found, type) and issubclass(found, BenchReader)) or found.protocol != protocol:
        raise UnknownProtocolError(f"protocol {protocol!r}: {plugin.reader} is not a BenchReader of it")
    return found


def make_reader(run: PlannedRun, log_dir: Path) -> BenchReader:
    """The reader of ``run.protocol``."""
    return reader_class(run.protocol)(run, log_dir)
