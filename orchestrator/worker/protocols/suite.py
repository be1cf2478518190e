"""What the benchmark-suite readers share (pyperf, pytest-benchmark, gbench; docs/design.md, "Suites").

A suite tool writes one JSON document to ``{result}`` holding many benchmarks. Each reader parses it
into ``Benchmark``s: a name, the per-value samples of its time per call converted to ms (``time_ms``,
lower is better; gbench adds ``cpu_time_ms``) and the unit the tool wrote them in. Each benchmark is
one case: its samples become the case's step rows and their mean its value. A document that breaks
the tool's schema fails the run with a ``SuiteFormatError`` naming the dotted path of the offending
value; a time unit that is not one of ``MS_PER_UNIT`` raises its subclass ``UnitError``.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from statistics import fmean
from typing import ClassVar, TypeVar

from orchestrator.capabilities import TIME_METRIC
from orchestrator.contract import RunResult, StepRecord
from orchestrator.store.step_log import StepLog
from orchestrator.worker.protocols import BenchReader, OnStep, Start, StopSignal, too_many_steps
from orchestrator.worker.protocols.json_doc import DocumentError, read_json_document, wait_for_exit

MS_PER_UNIT: dict[str, float] = {"s": 1e3, "second": 1e3, "ms": 1.0, "us": 1e-3, "ns": 1e-6}


class SuiteFormatError(ValueError):
    """A suite document that breaks its tool's schema, at a dotted ``path``."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path


class UnitError(SuiteFormatError):
    """A unit that cannot be converted to ms."""


@dataclass(frozen=True)
class Benchmark:
    """One benchmark of a suite document: its samples per metric in ms, or the tool's error."""

    name: str
    unit: str  # the unit the tool wrote its times in, as it spelled it
    samples_ms: dict[str, list[float]] = field(default_factory=dict)  # metric -> per-value samples
    steps_kept: bool = True  # False: the samples are the tool's summary (a mean), not per-value samples
    error: str | None = None  # the tool's own account of a benchmark that did not run

    def summary(self) -> dict:
        """The run's summary: each metric's mean; throughput is calls per second of ``time_ms``."""
        means = {metric: fmean(values) for metric, values in self.samples_ms.items()}
        time_ms = means.get(TIME_METRIC)
        return {"throughput": 1000 / time_ms if time_ms else None, "phase_means_ms": means, "metrics": {}}

    def steps(self) -> list[StepRecord]:
        """One step row per value (none where the tool kept only its summary)."""
        if not self.steps_kept:
            return []
        count = len(self.samples_ms.get(TIME_METRIC, ()))
        return [StepRecord(step=i, warmup=False, phases={m: v[i] for m, v in self.samples_ms.items()})
                for i in range(count)]


class SuiteReader(BenchReader):
    """Waits for the command, then reads the suite document at ``{result}``.

    ``benchmarks`` holds every benchmark of the document by name; ``header``, ``summary`` and
    ``steps`` are those of the run's own case (``select``).
    """

    tool: ClassVar[str]  # the tool's name in messages and the audit

    benchmarks: dict[str, Benchmark]
    tool_audit: dict

    def execute(self, start: Start, stop: StopSignal, on_step: OnStep) -> str | None:
        return wait_for_exit(start, stop)

    def complete(self) -> str | None:
        self.benchmarks, self.tool_audit = {}, {}
        try:
            document = read_json_document(self.result_path)
            benchmarks, self.tool_audit = self.parse(document)
        except DocumentError as exc:
            return str(exc)
        except UnitError as exc:
            self.bad_input = f"{self.tool} output {self.result_path}: {exc}"
            return self.bad_input
        except SuiteFormatError as exc:
            return f"{self.tool} output {self.result_path}: {exc}"
        for bench in benchmarks:
            if bench.name in self.benchmarks:
                return f"{self.tool} output {self.result_path}: two benchmarks named {bench.name!r}"
            self.benchmarks[bench.name] = bench
        if not self.benchmarks:
            return f"{self.tool} output {self.result_path} holds no benchmark"
        return None if self.run.suite_cases else self.select(self.run.case)  # a suite run: every case

    def select(self, case: str) -> str | None:
        """Make ``case``'s benchmark this reader's header, summary and steps; why it cannot, or None."""
        bench = self.benchmarks.get(case)
        if bench is None:
            return (f"{self.tool} output {self.result_path} has no benchmark named {case!r}; "
                    f"it has {self.names_text()}")
        if bench.error is not None:
            return f"{self.tool} benchmark {case!r} did not run: {bench.error}"
        steps = bench.steps()
        if (too_many := too_many_steps(self.run, len(steps))) is not None:
            return f"{self.tool} benchmark {case!r}: {too_many}"
        self.header = {"audit": {**self.tool_audit, "source_unit": bench.unit}}
        self.summary, self.steps = bench.summary(), StepLog(steps)
        return None

    def with_cases(self, result: RunResult) -> RunResult:
        from orchestrator.worker.protocols.suite_cases import case_results

        return case_results(self.run, self, result)

    def names_text(self, shown: int = 10) -> str:
        """The benchmarks' names, the first ``shown`` of them, for a message."""
        names = list(self.benchmarks)
        more = f" and {len(names) - shown} more" if len(names) > shown else ""
        return ", ".join(repr(n) for n in names[:shown]) + more

    @abstractmethod
    def parse(self, document: object) -> tuple[list[Benchmark], dict]:
        """(the document's benchmarks in order, what it says of the tool: ``tool``, ``versions``)."""


# Schema helpers: each names the dotted path of what it checks.

def get_object(node: object, key: str, path: str, *, optional: bool = False) -> dict:
    """The object at ``node[key]`` (``{}`` when ``optional`` and absent)."""
    value = _get(node, key, path, optional)
    return {} if value is _ABSENT else _check(value, dict, "an object", _at(path, key))


def get_list(node: object, key: str, path: str) -> list:
    """The list at ``node[key]``."""
    return _check(_get(node, key, path, False), list, "a list", _at(path, key))


def get_text(node: object, key: str, path: str, *, default: str | None = None) -> str:
    """The text at ``node[key]`` (``default`` when given and absent)."""
    value = _get(node, key, path, default is not None)
    if value is _ABSENT:
        return default  # type: ignore[return-value]  # optional only with a default
    return _check(value, str, "text", _at(path, key))


def get_number(node: object, key: str, path: str) -> float:
    """The finite, non-negative number at ``node[key]``."""
    return finite(_get(node, key, path, False), _at(path, key))


_ABSENT = object()
T = TypeVar("T")


def _get(node: object, key: str, path: str, optional: bool) -> object:
    if not isinstance(node, dict):
        raise SuiteFormatError(path or "the top", f"is {_kind(node)}, not an object")
    if key not in node:
        if optional:
            return _ABSENT
        raise SuiteFormatError(_at(path, key), "missing")
    return node[key]


def _check(value: object, kind: type[T], word: str, where: str) -> T:
    if not isinstance(value, kind):
        raise SuiteFormatError(where, f"is {_kind(value)}, not {word}")
    return value


def _at(path: str, key: str | int) -> str:
    return f"{path}.{key}" if path else str(key)


def finite(value: object, path: str) -> float:
    """``value`` as a float; ``SuiteFormatError`` for anything but a finite, non-negative number."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SuiteFormatError(path, f"is {_kind(value)}, not a number")
    if not math.isfinite(value) or value < 0:
        raise SuiteFormatError(path, f"is {value!r}, not a finite time >= 0")
    return float(value)


def to_ms(values: Sequence[float], unit: str, path: str) -> list[float]:
    """``values`` in ``unit`` converted to ms; ``UnitError`` at ``path`` for a unit not in ``MS_PER_UNIT``."""
    scale = MS_PER_UNIT.get(unit)
    if scale is None:
        raise UnitError(path, f"unit {unit!r} cannot be converted to ms for {TIME_METRIC} "
                              f"(known: {', '.join(MS_PER_UNIT)})")
    return [v * scale for v in values]


def numbers(node: object, path: str) -> list[float]:
    """A non-empty list of finite numbers at ``path``."""
    if not isinstance(node, list) or not node:
        raise SuiteFormatError(path, f"is {_kind(node)}, not a non-empty list of numbers")
    return [finite(v, f"{path}.{i}") for i, v in enumerate(node)]


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return f"a list of {len(value)}"
    return f"{type(value).__name__} {value!r:.40}"
