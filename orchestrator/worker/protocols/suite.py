"""What the benchmark-suite readers share (pyperf, pytest-benchmark, gbench; docs/design.md, "Suites").

A suite tool writes one JSON document to ``{result}`` holding many benchmarks. Each reader says what
it needs of it (its ``shape``: ``json_stream``), so the document is read incrementally and only that
is built, then parses it into ``Benchmark``s: a name, the samples of its time per call
(``samples.Samples``: ``time_ms``, lower is better; gbench adds ``cpu_time_ms``), the unit the tool
wrote them in and its factor to ms. Each benchmark is one case: the mean of all its samples is its
value and at most ``STEP_ROWS`` of them (the sweep's ``max_steps`` when lower), evenly spaced, its
step rows. A document that breaks the tool's schema fails the run with a ``SuiteFormatError`` naming
the dotted path of the offending value; a time unit that is not one of ``MS_PER_UNIT`` raises its
subclass ``UnitError``. A document growing past the sweep's ``max_result_mib`` while the bench runs
stops it (``json_doc.wait_for_exit``), with the reader's ``write_less`` hint.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from dataclasses import dataclass, field
from typing import ClassVar, TypeVar

from orchestrator.capabilities import TIME_METRIC
from orchestrator.contract import RunResult, StepRecord
from orchestrator.store.step_log import StepLog
from orchestrator.worker.protocols import BenchReader, OnStep, Start, StopSignal
from orchestrator.worker.protocols.json_doc import result_cap, wait_for_exit
from orchestrator.worker.protocols.json_stream import DocumentError, read_shaped
from orchestrator.worker.protocols.samples import STEP_ROWS, Samples

MS_PER_UNIT: dict[str, float] = {"s": 1e3, "second": 1e3, "ms": 1.0, "us": 1e-3, "ns": 1e-6}
STREAMED_MAX_RESULT_MIB = 1024  # the default max_result_mib of a suite's document (read incrementally)


class SuiteFormatError(ValueError):
    """A suite document that breaks its tool's schema, at a dotted ``path``."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path


class UnitError(SuiteFormatError):
    """A unit that cannot be converted to ms."""


@dataclass(frozen=True)
class Benchmark:
    """One benchmark of a suite document: its samples per metric, or the tool's error."""

    name: str
    unit: str  # the unit the tool wrote its times in, as it spelled it
    samples: dict[str, Samples] = field(default_factory=dict)  # metric -> its samples, in ``unit``
    ms_per_unit: float = 1.0
    steps_kept: bool = True  # False: the samples are the tool's summary (a mean), not per-value samples
    error: str | None = None  # the tool's own account of a benchmark that did not run

    def summary(self) -> dict:
        """The run's summary: each metric's mean over all samples, in ms; throughput is calls per
        second of ``time_ms``."""
        means = {metric: samples.mean * self.ms_per_unit for metric, samples in self.samples.items()}
        time_ms = means.get(TIME_METRIC)
        return {"throughput": 1000 / time_ms if time_ms else None, "phase_means_ms": means, "metrics": {}}

    def steps(self) -> list[StepRecord]:
        """One step row per kept sample, numbered by its place among all of them (none where the tool
        kept only its summary)."""
        if not self.steps_kept or TIME_METRIC not in self.samples:
            return []
        rows = {metric: samples.rows(self.ms_per_unit) for metric, samples in self.samples.items()}
        return [StepRecord(step=index, warmup=False, phases={m: values[i][1] for m, values in rows.items()})
                for i, (index, _) in enumerate(rows[TIME_METRIC])]

    @property
    def count(self) -> int:
        """How many samples its value is the mean of."""
        samples = self.samples.get(TIME_METRIC)
        return samples.count if samples is not None else 0


class SuiteReader(BenchReader):
    """Waits for the command, then reads the suite document at ``{result}``.

    ``benchmarks`` holds every benchmark of the document by name; ``header``, ``summary`` and
    ``steps`` are those of the run's own case (``select``).
    """

    tool: ClassVar[str]  # the tool's name in messages and the audit
    shape: ClassVar[object]  # what ``parse`` reads of the document (``json_stream``)
    write_less: ClassVar[str]  # how to have the tool write a smaller document

    benchmarks: dict[str, Benchmark]
    tool_audit: dict

    def execute(self, start: Start, stop: StopSignal, on_step: OnStep) -> str | None:
        return wait_for_exit(start, stop, self.result_path, self.max_result_bytes, self.write_less)

    @property
    def max_result_bytes(self) -> int:
        return result_cap(self.run, STREAMED_MAX_RESULT_MIB)

    @property
    def steps_limit(self) -> int:
        """The most step rows a case keeps: ``STEP_ROWS``, or the sweep's ``max_steps`` when lower."""
        return min(STEP_ROWS, self.run.max_steps or STEP_ROWS)

    def complete(self) -> str | None:
        self.benchmarks, self.tool_audit = {}, {}
        try:
            document = read_shaped(self.result_path, self.shape, max_bytes=self.max_result_bytes,
                                   samples_limit=self.steps_limit)
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
        self.header = {"audit": {**self.tool_audit, "source_unit": bench.unit, "samples": bench.count}}
        self.summary, self.steps = bench.summary(), StepLog(bench.steps())
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
    try:
        number = float(value)
    except OverflowError:  # an int beyond a float's range
        raise SuiteFormatError(path, f"is {_kind(value)}, not a finite time >= 0") from None
    if not math.isfinite(number) or number < 0:
        raise SuiteFormatError(path, f"is {value!r}, not a finite time >= 0")
    return number


def ms_per(unit: str, path: str) -> float:
    """How many ms one ``unit`` is; ``UnitError`` at ``path`` for a unit not in ``MS_PER_UNIT``."""
    scale = MS_PER_UNIT.get(unit)
    if scale is None:
        raise UnitError(path, f"unit {unit!r} cannot be converted to ms for {TIME_METRIC} "
                              f"(known: {', '.join(MS_PER_UNIT)})")
    return scale


def numbers(node: object, path: str) -> list[float]:
    """A non-empty list of finite numbers >= 0 at ``path``."""
    if not isinstance(node, list) or not node:
        raise SuiteFormatError(path, f"is {_kind(node)}, not a non-empty list of numbers")
    return [finite(v, f"{path}.{i}") for i, v in enumerate(node)]


def samples_at(node: object, path: str) -> Samples:
    """The non-empty ``Samples`` of finite numbers >= 0 read at ``path`` (a ``json_stream.SAMPLES``)."""
    if not isinstance(node, Samples) or node.count == 0 and node.problem is None:
        raise SuiteFormatError(path, f"is {_kind(node)}, not a non-empty list of numbers")
    if node.problem is not None:
        index, value = node.problem
        finite(value, f"{path}.{index}")  # raises, naming what is there
    return node


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return f"a list of {len(value)}"
    if isinstance(value, Samples):
        return f"a list of {value.count}"
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return f"int of {value.bit_length()} bits"
    return f"{type(value).__name__} {value!r:.40}"
