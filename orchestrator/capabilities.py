"""What each run protocol provides, known without running a bench, and the registry of protocols
(docs/design.md, "Protocols"; docs/protocols.md, "A protocol of your own").

A protocol is a ``ProtocolPlugin``: its name, its declaration (``declare(json_mapping) ->
ProtocolInfo``: capabilities, metric names) and its reader (``"module:Class"``, a
``orchestrator.worker.protocols.BenchReader`` subclass, imported only by the bench worker). The
built-in ones are ``BUILTIN_PROTOCOLS``; a package adds one through the entry-point group
``shasweep.protocols`` (the entry point's name is the protocol's, its object a ``ProtocolPlugin``).
Every part of the orchestrator asks a protocol what it can do through ``describe(name, mapping)``:
the spec (which metrics a gate may name), the worker's audit (is there a throughput window to
check?), the report (what unit is the throughput in?); code outside ``worker/protocols/`` and this
module never compares protocol names. Imports nothing of the orchestrator, so every group may
import it; the entry points are read once, and only when a name is not a built-in one.
"""

from __future__ import annotations

import enum
import fnmatch
import functools
import hashlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

DEFAULT_PROTOCOL = "v1"  # a sweep without a ``protocol`` key, a row stored before the column
ENTRY_POINT_GROUP = "shasweep.protocols"  # where a package registers a protocol of its own
PROTOCOL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*\Z")  # what a protocol may be called


class Capability(enum.Flag):
    """What a protocol's reader can do or what its runs carry."""

    NONE = 0
    STEPS = enum.auto()  # every run reports its steps (step rows), so a run's step count is a fact
    LIVE_STREAM = enum.auto()  # records arrive while the bench runs; a failed run keeps what arrived
    THROUGHPUT_WINDOW = enum.auto()  # the summary carries measure_wall_s: throughput can be cross-checked
    CONTROL_CHANNEL = enum.auto()  # the worker can pace the bench step by step (lockstep)
    AUDIT_FIELDS = enum.auto()  # the bench reports what it loaded (header audit: git_sha, module file)
    MANY_CASES = enum.auto()  # one bench run measures many cases (benchmark suites)
    MEASURE_PARAM = enum.auto()  # the worker itself runs ``params.warmup`` + ``params.measure`` steps
    RESULT_DOCUMENT = enum.auto()  # reads one document the bench writes to {result}
    JSON_MAPPING = enum.auto()  # the sweep's ``json`` block says where that document's numbers are
    WHOLE_RUN_PHASES = enum.auto()  # each phase times the whole run (wall, user, sys), not a part of a step


@dataclass(frozen=True)
class SuiteDriver:
    """How ``orchestrator.suitekit`` runs a suite tool's own command (docs/design.md, "Suites in
    lockstep"): ``lockstep`` are the arguments that put it on the control channel, ``select`` those
    that run only the cases listed in ``{select}`` with the tool itself; both inserted after the
    command's leading ``{python}`` (``after_python``: a script run through a shim) or appended (pytest
    reads ``-p`` anywhere in its arguments)."""

    lockstep: tuple[str, ...]
    select: tuple[str, ...]
    after_python: bool

    def render(self, command: tuple[str, ...] | list[str], args: tuple[str, ...]) -> tuple[str, ...]:
        """``command`` with ``args`` (``lockstep`` or ``select``) put where the tool reads them."""
        if self.after_python:
            return (command[0], *args, *command[1:])
        return (*command, *args)


PYTEST_DRIVER = SuiteDriver(
    lockstep=("-p", "no:benchmark", "-p", "no:codspeed", "-p", "orchestrator.suitekit.pytest_plugin",
              "--shasweep-control={control}", "--shasweep-stream={stream}"),
    select=("-p", "orchestrator.suitekit.pytest_select", "--shasweep-select={select}"), after_python=False)
PYPERF_DRIVER = SuiteDriver(
    lockstep=("-m", "orchestrator.suitekit.pyperf_shim", "--control", "{control}", "--stream", "{stream}"),
    select=("-m", "orchestrator.suitekit.pyperf_select", "--select", "{select}"), after_python=True)


@dataclass(frozen=True)
class ProtocolInfo:
    """One protocol under one sweep's settings.

    ``phases`` (``*_ms`` names) and ``metrics`` (other number columns) are what every run reports
    besides ``throughput``; None where only the bench knows, i.e. until its first ok run.
    ``throughput``: whether runs report one (a json mapping may map none).
    """

    name: str
    capabilities: Capability
    phases: tuple[str, ...] | None
    metrics: tuple[str, ...] | None
    throughput_unit: str | None = None  # what throughput counts per second; None: the bench's own unit
    throughput: bool = True
    suite_driver: SuiteDriver | None = None  # a suite that runs in lockstep in its own process
    # phases its runs report only in a lockstep sweep: what the suite channel measures itself (CPU time)
    lockstep_phases: tuple[str, ...] = ()

    def has(self, capability: Capability) -> bool:
        """Whether every flag of ``capability`` is declared."""
        return capability in self.capabilities

    def in_lockstep(self) -> ProtocolInfo:
        """This protocol as a lockstep sweep runs it: its ``lockstep_phases`` reported too."""
        if not self.lockstep_phases or self.phases is None:
            return self
        return replace(self, phases=(*self.phases, *self.lockstep_phases), lockstep_phases=())

    @property
    def provides(self) -> frozenset[str] | None:
        """Every metric a gate or report row may name (throughput, phases, metrics); None: unknown
        until the bench's first ok run."""
        if self.phases is None or self.metrics is None:
            return None
        return frozenset((*(["throughput"] if self.throughput else []), *self.phases, *self.metrics))


class UnknownProtocolError(ValueError):
    """A protocol name no reader declares."""


# CPU time (docs/design.md, "Phase names"): the same name means the same clock in every protocol.
CPU_METRIC = "cpu_ms"  # the bench process's CPU time (every thread, user + system) per step, call or run
THREAD_CPU_METRIC = "thread_cpu_ms"  # the CPU time of the thread that ran the step, per step or call
CPU_PHASES: tuple[str, ...] = (CPU_METRIC, THREAD_CPU_METRIC)  # figures of a step, not parts of its wall

TIMED_PHASES: tuple[str, ...] = ("wall_ms", "user_ms", "sys_ms", CPU_METRIC)
TIMED_METRICS: tuple[str, ...] = ("max_rss_mib",)


def _v1(mapping: Mapping[str, object]) -> ProtocolInfo:
    return ProtocolInfo("v1", Capability.STEPS | Capability.LIVE_STREAM | Capability.THROUGHPUT_WINDOW
                        | Capability.AUDIT_FIELDS | Capability.CONTROL_CHANNEL, phases=None, metrics=None)


def _json(mapping: Mapping[str, object]) -> ProtocolInfo:
    phases, metrics = mapping.get("phases") or {}, mapping.get("metrics") or {}
    window = Capability.THROUGHPUT_WINDOW if mapping.get("measure_wall_s") else Capability.NONE
    return ProtocolInfo("json", Capability.RESULT_DOCUMENT | Capability.JSON_MAPPING | window,
                        phases=tuple(phases),  # type: ignore[arg-type]
                        metrics=tuple(metrics),  # type: ignore[arg-type]
                        throughput=bool(mapping.get("throughput")))


def _time(mapping: Mapping[str, object]) -> ProtocolInfo:
    return ProtocolInfo("time", Capability.STEPS | Capability.MEASURE_PARAM | Capability.WHOLE_RUN_PHASES,
                        phases=TIMED_PHASES,
                        metrics=TIMED_METRICS, throughput_unit="runs")


def higher_is_better(metric: str) -> bool:
    """Whether a larger ``metric`` is an improvement: the throughput (per second); every other metric
    shasweep records is a time, an instruction count or a size, where less is better."""
    return metric == "throughput"


INSTRUCTIONS_METRIC = "instructions"  # instructions per step or call, counted under valgrind (instrument)
TIME_METRIC = "time_ms"  # a suite benchmark's time per call (lower is better), whatever tool wrote it
CPU_TIME_METRIC = "cpu_time_ms"  # gbench's own CPU time per iteration (its thread's unless told otherwise)
SUITE_PHASES: dict[str, tuple[str, ...]] = {  # what each suite reader gives every benchmark
    "pyperf": (TIME_METRIC,), "pytest-benchmark": (TIME_METRIC,), "gbench": (TIME_METRIC, CPU_TIME_METRIC)}
_SUITE_STEPS: dict[str, Capability] = {  # every run has per-value samples (step rows)
    "pyperf": Capability.STEPS, "pytest-benchmark": Capability.NONE, "gbench": Capability.NONE}
_SUITE_DRIVERS: dict[str, SuiteDriver] = {"pyperf": PYPERF_DRIVER, "pytest-benchmark": PYTEST_DRIVER}


def _suite(name: str) -> Callable[[Mapping[str, object]], ProtocolInfo]:
    """A benchmark suite's output file: each benchmark its time per call, ``time_ms`` (lower is
    better); throughput is calls per second. Where shasweep's suite channel drives the tool (lockstep),
    it times the calls itself and reports their CPU time per call too."""
    def declare(mapping: Mapping[str, object]) -> ProtocolInfo:
        driver = _SUITE_DRIVERS.get(name)
        control = Capability.CONTROL_CHANNEL if driver else Capability.NONE
        return ProtocolInfo(name, Capability.RESULT_DOCUMENT | Capability.MANY_CASES | _SUITE_STEPS[name]
                            | control, phases=SUITE_PHASES[name], metrics=(), throughput_unit="calls",
                            suite_driver=driver, lockstep_phases=CPU_PHASES if driver else ())
    return declare


@dataclass(frozen=True)
class ProtocolPlugin:
    """One run protocol: what ``describe`` answers and what the worker reads a bench run with.

    ``declare(json_mapping)`` says what the protocol provides under a sweep's settings (its ``json``
    block, empty for every other protocol), without running anything: a ``ProtocolInfo`` named
    ``name``. ``reader`` is ``"module:Class"``: a subclass of ``orchestrator.worker.protocols.
    BenchReader`` whose ``protocol`` is ``name``, imported only where runs are read (the worker).
    """

    name: str
    declare: Callable[[Mapping[str, object]], ProtocolInfo]
    reader: str


_READERS = "orchestrator.worker.protocols"
BUILTIN_PROTOCOLS: dict[str, ProtocolPlugin] = {plugin.name: plugin for plugin in (
    ProtocolPlugin("v1", _v1, f"{_READERS}.v1:StreamReader"),
    ProtocolPlugin("json", _json, f"{_READERS}.json_doc:JsonDocReader"),
    ProtocolPlugin("time", _time, f"{_READERS}.timed:TimedReader"),
    ProtocolPlugin("pyperf", _suite("pyperf"), f"{_READERS}.pyperf_json:PyperfReader"),
    ProtocolPlugin("pytest-benchmark", _suite("pytest-benchmark"),
                   f"{_READERS}.pytest_benchmark_json:PytestBenchmarkReader"),
    ProtocolPlugin("gbench", _suite("gbench"), f"{_READERS}.gbench_json:GbenchReader"),
)}
PROTOCOLS: tuple[str, ...] = tuple(BUILTIN_PROTOCOLS)  # the built-in names


@functools.cache
def _entry_points() -> tuple[dict[str, ProtocolPlugin], dict[str, str]]:
    """The protocols packages register (``ENTRY_POINT_GROUP``), and why each other entry point of the
    group is not one (a name taken by a built-in protocol or not a valid name, an import that fails,
    an object that is not a ``ProtocolPlugin`` of that name)."""
    from importlib.metadata import entry_points

    found: dict[str, ProtocolPlugin] = {}
    broken: dict[str, str] = {}
    for point in entry_points(group=ENTRY_POINT_GROUP):
        where = f"entry point {point.name} = {point.value}"
        if point.name in BUILTIN_PROTOCOLS or not PROTOCOL_NAME.match(point.name):
            broken[point.name] = f"{where}: the name is built in or not a protocol name"
            continue
        try:
            plugin = point.load()
        except Exception as exc:  # noqa: BLE001 - a package's import error names the package, not us
            broken[point.name] = f"{where} does not load: {type(exc).__name__}: {exc}"
            continue
        if not isinstance(plugin, ProtocolPlugin) or plugin.name != point.name:
            broken[point.name] = f"{where} is not a ProtocolPlugin named {point.name!r}"
            continue
        found.setdefault(point.name, plugin)
    return found, broken


def registered() -> dict[str, ProtocolPlugin]:
    """Every protocol a sweep may name: the built-in ones, then those packages register."""
    return {**BUILTIN_PROTOCOLS, **_entry_points()[0]}


def plugin_of(name: str) -> ProtocolPlugin:
    """The protocol ``name``; ``UnknownProtocolError`` naming the registered ones (and why an entry
    point of that name is not one) when there is none."""
    found = BUILTIN_PROTOCOLS.get(name) or _entry_points()[0].get(name)
    if found is None:
        raise unknown_protocol(name)
    return found


def unknown_protocol(name: object) -> UnknownProtocolError:
    """The error for ``name``, which names no registered protocol: the registered ones, and why an entry
    point of that name is not one."""
    why = _entry_points()[1].get(name) if isinstance(name, str) else None
    return UnknownProtocolError(f"unknown protocol {name!r}; known: {', '.join(registered())}"
                                + (f" ({why})" if why else ""))


# Suites (``MANY_CASES``): one bench run, many cases. How the spec, the plan, the worker and the
# report name them (docs/design.md, "Suites").
SUITE_CASE = "(suite)"  # the case of a suite run: one bench run whose output holds many cases
DISCOVER = "*"  # ``cases: discover``: every benchmark the suite's output holds


MAX_CASE_CHARS = 200  # a suite's case name, as rows and reports carry it


def suite_case_name(name: str) -> str:
    """A benchmark's name as a case: on one line (a control character, a line break included, is
    written as its escape, ``\\n`` or ``\\x1b``), without surrounding blanks, at most
    ``MAX_CASE_CHARS`` characters (a longer one keeps its start and a digest of the whole, so two stay
    apart), never empty. What else it holds (``/``, ``..``, markup) is text: no case name becomes a
    path, and every output escapes it."""
    flat = "".join(char if char.isprintable() or char == " " else char.encode("unicode_escape").decode()
                   for char in name).strip()
    if len(flat) > MAX_CASE_CHARS:
        digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:12]
        flat = f"{flat[:MAX_CASE_CHARS - 14]}..{digest}"
    return flat or "(unnamed)"


def case_matches(case: str, pattern: str) -> bool:
    """Whether ``case`` is ``pattern`` or matches it as a glob (``*``, ``?``, ``[...]``); the exact name
    wins, so a pytest id like ``test_x[1]`` names itself."""
    return case == pattern or fnmatch.fnmatchcase(case, pattern)


def benchmark_selected(name: str, patterns: tuple[str, ...] | list[str]) -> bool:
    """Whether some pattern of a suite's ``cases`` selects the benchmark ``name`` (as its case is named)."""
    case = suite_case_name(name)
    return any(case_matches(case, pattern) for pattern in patterns)


def suite_case_key(suite_run_key: str, case: str) -> str:
    """The run key of ``case`` read from the suite run ``suite_run_key``: deterministic, so a re-run
    of the suite replaces each case's files."""
    return hashlib.sha256(f"{suite_run_key}\0{case}".encode()).hexdigest()[:20]


def describe(protocol: str | None, mapping: Mapping[str, object] | None = None) -> ProtocolInfo:
    """``protocol`` under the sweep's ``json`` mapping (protocol json; ignored by the others). None
    (a row stored before the ``protocol`` column) is ``DEFAULT_PROTOCOL``; a name no protocol has
    (``registered``) raises ``UnknownProtocolError`` naming the known ones."""
    name = DEFAULT_PROTOCOL if protocol is None else protocol
    info = plugin_of(name).declare(mapping or {})
    if not isinstance(info, ProtocolInfo) or info.name != name:
        raise UnknownProtocolError(f"protocol {name!r}: its declaration gave {info!r:.80}, "
                                   "not a ProtocolInfo of that name")
    return info


def describe_stored(protocol: object) -> ProtocolInfo:
    """``describe`` for a stored row's ``protocol`` cell: null, NaN or a name; an unknown name (a
    newer writer, a protocol whose package is not installed here) is described as having no
    capability and unknown metrics."""
    name = protocol if isinstance(protocol, str) else None
    try:
        return describe(name)
    except UnknownProtocolError:
        return ProtocolInfo(str(name), Capability.NONE, phases=None, metrics=None)
