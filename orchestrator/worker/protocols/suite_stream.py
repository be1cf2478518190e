"""The suite channel's records as the worker reads them (docs/design.md, "Suites in lockstep"): a v1
stream whose steps and blocks each belong to a case, and the records that say where the process is
(``case``: parked inside a case; ``case_end``: how one ended; ``calibrated``: a case's calls per step).

``SuiteStreamState`` is a ``StreamState`` (the header, every step and block in stream order, the
summary) that also keeps each case's steps and blocks apart, so each case becomes a run of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from orchestrator.contract import StepRecord
from orchestrator.errors import ProtocolError
from orchestrator.worker.protocols.v1_records import StreamState, valid_time

SUITE_VERSION = 1  # the header's "suite" this worker reads
OUTCOMES = ("passed", "skipped", "absent", "failed", "unsupported")


@dataclass
class CaseRecords:
    """What one process said of one case."""

    steps: list[StepRecord] = field(default_factory=list)  # in stream order, warm-up steps flagged
    blocks: list[dict] = field(default_factory=list)
    block_phase_sums: dict[int, dict[str, float]] = field(default_factory=dict)
    calls: int | None = None  # its calibration's answer
    step_ms: float | None = None  # how long the calibration's step of that many calls took, if it says
    end: dict | None = None  # its case_end record


@dataclass
class SuiteStreamState(StreamState):
    """A suite process's stream: ``cases`` (each case's records), ``ready`` (the case it is parked in,
    None between cases) and ``failure`` (the first case that ended failed or unsupported)."""

    cases: dict[str, CaseRecords] = field(default_factory=dict)
    ready: str | None = None
    ended_cases: list[str] = field(default_factory=list)  # in the order they ended
    failure: dict | None = None

    def handler(self, kind: str) -> Callable[[StreamState, dict], None] | None:
        return _SUITE_HANDLERS.get(kind) or super().handler(kind)

    def ended_early(self, name: str) -> str | None:
        if self.failure is None:
            return None
        failure = self.failure
        return (f"benchmark {failure['case']!r} on {name} ended {failure['outcome']}: "
                f"{failure.get('api') or failure.get('message') or ''}")

    def collected(self) -> list[str]:
        """The case names the header lists (the process's benchmarks, as collected)."""
        names = (self.header or {}).get("cases")
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise ProtocolError("a suite header needs 'cases', a list of names")
        if len(set(names)) != len(names):
            twice = next(n for n in names if names.count(n) > 1)
            raise ProtocolError(f"the suite lists the benchmark {twice!r} twice")
        return names

    def case(self, name: str) -> CaseRecords:
        return self.cases.setdefault(name, CaseRecords())

    def _on_case(self, record: dict) -> None:
        self._require_header("case")
        self.ready = _name(record, self._where())
        self.case(self.ready)

    def _on_calibrated(self, record: dict) -> None:
        calls = record.get("calls")
        if isinstance(calls, bool) or not isinstance(calls, int) or calls < 1:
            raise ProtocolError(f"{self._where()}: a calibration needs 'calls' >= 1, got {record!r:.200}")
        step_ms = record.get("step_ms")
        if step_ms is not None and not valid_time(step_ms):
            raise ProtocolError(f"{self._where()}: a calibration's 'step_ms' must be a finite time >= 0, "
                                f"got {record!r:.200}")
        case = self.case(_name(record, self._where()))
        case.calls, case.step_ms = calls, None if step_ms is None else float(step_ms)

    def _on_suite_step(self, record: dict) -> None:
        super()._on_step(record)
        name = _name(record, self._where())
        step = self.steps.last
        assert step is not None
        records = self.case(name)
        records.steps.append(step)
        if isinstance(block := record.get("block"), int) and not isinstance(block, bool):
            sums = records.block_phase_sums.setdefault(block, {})
            for phase, value in step.phases.items():
                sums[phase] = sums.get(phase, 0.0) + value

    def _on_suite_block(self, record: dict) -> None:
        super()._on_block(record)
        self.case(_name(record, self._where())).blocks.append(record)

    def _on_case_end(self, record: dict) -> None:
        name = _name(record, self._where())
        if record.get("outcome") not in OUTCOMES:
            raise ProtocolError(f"{self._where()}: case {name!r} ended with an unknown outcome "
                                f"{record.get('outcome')!r}")
        self.case(name).end = record
        self.ended_cases.append(name)
        if self.ready == name:
            self.ready = None
        if record["outcome"] in ("failed", "unsupported") and self.failure is None:
            self.failure = record


def _name(record: dict, where: str) -> str:
    name = record.get("case")
    if not isinstance(name, str):
        raise ProtocolError(f"{where}: a {record.get('kind')} record needs a case name, got {record!r:.200}")
    return name


_SUITE_HANDLERS: dict[str, Callable[[StreamState, dict], None]] = {
    "case": SuiteStreamState._on_case,
    "calibrated": SuiteStreamState._on_calibrated,
    "step": SuiteStreamState._on_suite_step,
    "block": SuiteStreamState._on_suite_block,
    "case_end": SuiteStreamState._on_case_end,
}
