"""The names the client, the scheduler's board and the bench worker share, and nothing else.

``PlannedRun`` is everything the worker needs to run one bench process; it crosses the Dask
boundary by pickling, so it holds only plain data (its ``lockstep`` and ``quiet`` settings typed).
``RunResult`` (with its ``HostRecord``, ``BenchUsage``, ``QuietWait`` and steps) is what the worker
hands the store; ``RunOutcome`` is what a bench task hands the dispatcher, as its return value and as
JSON in its ``finished`` event. The topic and event names are how progress and cancellation travel.
Imports nothing of the orchestrator (see docs/design.md, "Code layout").
"""

from __future__ import annotations

import math
import os
import platform
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Literal, Protocol, get_args

# How a run ended, decided on the worker; a plain string wherever it goes (Parquet, JSON, Dask's
# messages), checked where a ``RunResult`` or an outcome is made.
RunStatus = Literal["ok", "failed", "timeout", "cancelled", "audit_failed"]
AUDIT_FAILED: RunStatus = "audit_failed"  # ran to the end, but failed its audit (worker.run_audit)
STATUSES: tuple[str, ...] = get_args(RunStatus)
PROTOCOL_VERSION = 1  # the run protocol version this orchestrator reads (docs/design.md, "Run protocol")
PROGRESS_TOPIC = "shasweep-progress"  # Worker.log_event topic of the bench worker's progress events
RUN_KEY_VAR = "SHASWEEP_RUN_KEY"  # in the bench's environment, inherited by every process it starts
HOST_ID_VAR = "SHASWEEP_HOST_ID"


def check_status(status: object) -> None:
    """``ValueError`` unless ``status`` is one of ``STATUSES``."""
    if status not in STATUSES:
        raise ValueError(f"run status {status!r} is none of {', '.join(STATUSES)}")


def host_id() -> str:
    """This host's id: ``$SHASWEEP_HOST_ID`` (containers, tests, a fleet) or the hostname. It names the
    bench host (``host_id`` column, host lock) and the writer of a temporary results file."""
    return os.environ.get(HOST_ID_VAR) or platform.node()


def cancel_event_name(sweep_id: str, token: str = "") -> str:
    """Name of the Dask ``Event`` that, once set, stops the sweep's running bench; ``token`` (the
    sweep's ``client_token``, known only to readers of its record) makes it unguessable."""
    return f"shasweep-cancel-{sweep_id}-{token}" if token else f"shasweep-cancel-{sweep_id}"


def scheduler_lost(address: str, run_key: str | None) -> str:
    """Why a run or a sweep stopped when its scheduler went away; the dispatcher and the bench worker
    say the same."""
    where = f"during run {run_key}" if run_key else "while its rounds ran"
    return f"lost the scheduler at {address} {where}"


@dataclass
class StepRecord:
    """One vector step: its index, whether it was warm-up, and its phase timings in ms."""

    step: int
    warmup: bool
    phases: dict[str, float]


@dataclass(frozen=True)
class HostRecord:
    """One bench host as one run saw it; every field keeps its type (None where unknown, e.g. a run that
    failed before the host was read) so Parquet schemas stay stable."""

    hostname: str | None = None
    cpu_model: str | None = None
    cpu_logical: int | None = None
    cpu_physical: int | None = None
    ram_gib: float | None = None
    gpu_name: str | None = None
    gpu_memory_mib: int | None = None
    gpu_driver: str | None = None
    os: str | None = None
    kernel: str | None = None
    python: str | None = None
    versions: str | None = None  # JSON object: package -> version or null
    threads: str | None = None  # JSON object: thread variable -> value or null
    affinity: str | None = None  # CPU list, e.g. "0-3,8"
    id: str | None = None  # the bench host's id (``SHASWEEP_HOST_ID`` or the hostname): column ``host_id``
    worker: str | None = None  # the address of the Dask worker that ran the run (column ``host_worker``)
    # CPU frequency settings from /sys and, per run, the measured window (worker.disturbance)
    cpu_governor: str | None = None
    cpu_turbo: str | None = None  # on | off
    isolated_cpus: str | None = None  # the kernel's isolcpus list; "" for none
    steal_frac: float | None = None  # the host's CPU steal over the measured window
    load_before: float | None = None  # 1-minute load average before the first measured step
    load_after: float | None = None  # and after the last
    step_cv: float | None = None  # CV of the measured steps' time
    # instrument: valgrind (docs/design.md, "Instruction counts"): what a count depends on beside the
    # CPU model: valgrind's version and the bench interpreter's build
    valgrind: str | None = None
    interpreter: str | None = None

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class LockstepSettings:
    """``order: lockstep``'s part of a run (docs/design.md, "Run protocol", control channel): the
    blocks of its round and what a bench without the control channel makes the round do."""

    block_steps: int  # measured steps per block
    blocks: int  # measured blocks per side and round
    block_warmup: int = 1  # warm-up steps before each measured block, in the same turn
    fallback: str = "stop"  # stop | interleaved
    # the argv template without the control option, where the plan added it to envruntime's command
    plain_argv: tuple[str, ...] | None = None
    step_ms: float = 10.0  # a suite's benchmarks: calls per step calibrated to take about this long
    # a suite's command that runs only the cases listed in {select}, with the tool itself (its
    # fallen-back cases: docs/design.md, "Suites in lockstep"); None: not a suite run in lockstep
    select_argv: tuple[str, ...] | None = None

    @property
    def commanded_steps(self) -> int:
        """The measured steps a run of the round is commanded: blocks x block_steps."""
        return self.blocks * self.block_steps


@dataclass(frozen=True)
class InstrumentSettings:
    """``instrument: valgrind``'s part of a run (docs/design.md, "Instruction counts"): the argv template
    of the process run under callgrind after the measured ones, and whether its bench side marks the
    measured steps (a suite through ``orchestrator.suitekit``, a bench of the bench helper) or the
    whole process is counted."""

    argv: tuple[str, ...]
    marks: bool
    tool: str = "valgrind"


@dataclass(frozen=True)
class QuietLimits:
    """The sweep's ``quiet:``: wait before a run or round until the host was quiet for a second."""

    max_load: float  # busy CPUs over the last second
    max_steal: float  # stolen share of CPU time over the last second, 0-1
    max_wait_s: float  # give up (and run anyway) after this long


@dataclass(frozen=True)
class QuietWait:
    """How a wait for a quiet host ended: how long it took, the last second's figures, whether the
    limits were met (``worker.quiet``; the ``quiet_*`` columns)."""

    waited_s: float
    load: float | None
    steal: float | None
    met: bool

    def columns(self) -> dict[str, float | bool | None]:
        return {"quiet_wait_s": self.waited_s, "quiet_load": self.load, "quiet_steal": self.steal,
                "quiet_met": self.met}


@dataclass(frozen=True)
class PlannedRun:
    """One bench invocation: a case on one side's SHA, one repeat."""

    sweep_id: str
    run_key: str  # deterministic: hash of sweep id, side, case, repeat, sha, params
    order: int  # position in the plan, 0-based
    side: str
    ref: str  # as written in the sweep
    sha: str  # the full SHA the ref resolved to
    case: str  # any name; envruntime's are "algo/task/sim"
    algo: str | None  # the case's parts when it has the form algo/task/sim, else None
    task: str | None
    sim: str | None
    variant: str
    repeat: int
    repo: str  # absolute path of the git repository the SHA lives in
    argv_template: tuple[str, ...]  # placeholders: see orchestrator.spec.schema.BUILTIN_PLACEHOLDERS
    params: dict = field(default_factory=dict)  # free-form; each key is a placeholder
    env: dict = field(default_factory=dict)  # extra environment variables for the bench process
    timeout_s: float = 600.0
    results_root: str = "results"
    token: str = ""  # the sweep's client token: in its cancel event name and its progress messages
    pythonpath: tuple[str, ...] = (".",)  # worktree-relative directories first on the bench's PYTHONPATH
    protocol: str = "v1"  # a name ``orchestrator.capabilities`` declares (docs/design.md, "Protocols")
    json_mapping: dict = field(default_factory=dict)  # protocol json: throughput, phases, metrics paths
    # modules that must be imported from the SHA's worktree; None: the protocol's default
    # (worker.module_audit.modules_to_audit)
    audit_modules: tuple[str, ...] | None = None
    prepare: tuple[tuple[str, ...], ...] = ()  # argvs run once per new worktree of the SHA
    sweep_dir: str = ""  # absolute directory of the sweep YAML ({sweep_dir})
    submodules: bool = False  # the worktree's submodules checked out at the commits the SHA records
    # a suite run (case ``capabilities.SUITE_CASE``): the names and globs of the cases its output gives
    suite_cases: tuple[str, ...] = ()
    # an adaptive round's lockstep suite run: the cases (as named) it plays, of those ``suite_cases``
    # selects; None: all of them
    suite_only: tuple[str, ...] | None = None
    # an adaptive round's instrumented lockstep suite run: the cases its instrumented process counts
    # (those a gate on ``instructions`` still needs); None: every case it plays; (): no such process
    count_only: tuple[str, ...] | None = None
    lockstep: LockstepSettings | None = None  # order: lockstep's blocks; None for every other order
    quiet: QuietLimits | None = None  # the sweep's quiet:; None: never wait
    max_steps: int | None = None  # a run reporting more steps fails (the sweep's max_steps); None: no cap
    max_result_mib: int | None = None  # the most MiB {result} may hold (the sweep's); None: the protocol's
    python: str | None = None  # the interpreter {python} names (the side's or sweep's); None: the worker's
    instrument: InstrumentSettings | None = None  # instrument: valgrind; None: nothing counted

    def to_dict(self) -> dict:
        """Plain-dict form (for JSON and Parquet columns)."""
        return asdict(self)

    def outcome(self, **fields: object) -> Outcome:
        """This run's outcome: its identity and ``fields`` (``status``, ``error``, ``throughput``, ...)."""
        return Outcome(run_key=self.run_key, order=self.order, side=self.side, case=self.case, sha=self.sha,
                       repeat=self.repeat, **fields)  # type: ignore[arg-type]


@dataclass(frozen=True, kw_only=True)
class Outcome:
    """One run as its bench task ended it (or the dispatcher, for a run whose task never reported): what
    the task returns, what its ``finished`` event carries as JSON (``to_json``; a newer field is one
    more key) and what the dispatcher decides by and records (``spec.record.RunOutcome`` keeps part)."""

    run_key: str
    order: int
    side: str
    case: str
    sha: str
    repeat: int
    host_id: str | None = None
    status: RunStatus
    error: str | None = None
    throughput: float | None = None
    wall_s: float | None = None
    exit_code: int | None = None
    started_at: str | None = None  # ISO 8601
    ended_at: str | None = None
    log_dir: str | None = None
    runs_file: str | None = None
    steps_file: str | None = None
    reported: tuple[str, ...] | None = None  # an ok run's metric names with a value; None: not known
    lock_wait_s: float | None = None
    cases: int | None = None  # a suite run: how many cases it stored
    ran_in: str | None = None  # a lockstep sweep's run: lockstep | interleaved
    fallback: str | None = None  # why its case fell back to interleaved
    no_control: bool = False  # a lockstep round stopped by a bench without the control channel
    reused_from: str | None = None  # ``<sweep_id>/<run_key>`` of the run ``store.reuse`` copied

    def __post_init__(self) -> None:
        check_status(self.status)

    def to_json(self) -> dict:
        """Plain JSON values, every field a key."""
        values = asdict(self)
        values["reported"] = None if self.reported is None else list(self.reported)
        return values

    @classmethod
    def from_json(cls, values: dict) -> Outcome:
        """The outcome ``to_json`` gave (keys it does not know ignored); ``ValueError`` or ``TypeError``
        when it is not one."""
        known = {name: values[name] for name in cls.__dataclass_fields__ if name in values}
        if isinstance(known.get("reported"), list):
            known["reported"] = tuple(known["reported"])
        return cls(**known)


@dataclass(frozen=True)
class BenchUsage:
    """Wall time, CPU time and peak memory of the bench process (``os.wait4``; its waited-for children
    included) and where the peak came from (``rusage``, ``VmHWM``, ``bench`` or ``none``)."""

    wall_s: float
    user_s: float
    sys_s: float
    max_rss_mib: float | None
    rss_source: str


class StepSource(Protocol):
    """A run's steps as the worker collected them (``store.step_log.StepLog``, rows spooled to disk as
    they arrive); the store writes them, the audit reads their counts."""

    measured: int  # steps outside the warm-up
    longest_phase_ms: float  # summed over the measured steps: each step's longest phase

    def __len__(self) -> int: ...

    def __iter__(self) -> Iterator[StepRecord]: ...

    def step_cv(self) -> float | None: ...

    def discard(self) -> None: ...


class _NoSteps:
    """The steps of a run that reported none (``NO_STEPS``)."""

    measured = 0
    longest_phase_ms = 0.0

    def __len__(self) -> int:
        return 0

    def __iter__(self) -> Iterator[StepRecord]:
        return iter(())

    def step_cv(self) -> float | None:
        return None

    def discard(self) -> None:
        pass


NO_STEPS: StepSource = _NoSteps()


def summary_phase_means(summary: dict | None) -> dict[str, float | None]:
    """Every ``*_ms`` mean a run's summary reports (``phase_means_ms``)."""
    reported = (summary or {}).get("phase_means_ms")
    reported = reported if isinstance(reported, dict) else {}
    return {name: _float_or_none(value) for name, value in reported.items()
            if isinstance(name, str) and name.endswith("_ms")}


def summary_metrics(summary: dict | None) -> dict[str, float | None]:
    """A run's summary's other numbers (``metrics``: protocol json's mapping, protocol time's RSS)."""
    reported = (summary or {}).get("metrics")
    reported = reported if isinstance(reported, dict) else {}
    return {str(name): _float_or_none(value) for name, value in reported.items()}


def _float_or_none(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


@dataclass
class RunResult:
    """What executing one run produced on the worker, ready to be audited and written (``store.parquet``).
    ``header`` and ``summary`` are the bench's own records as its protocol's reader took them."""

    status: RunStatus
    error: str | None
    started_at: datetime  # wall clock, for people (a clock step moves it)
    ended_at: datetime
    exit_code: int | None
    log_dir: str
    host: HostRecord = field(default_factory=HostRecord)
    header: dict | None = None
    summary: dict | None = None  # throughput, measure_wall_s, phase_means_ms, metrics
    steps: StepSource = NO_STEPS
    usage: BenchUsage | None = None  # the bench process's resource usage, when it was reaped
    pythonpath: list[str] | None = None  # absolute directories put first on the bench's PYTHONPATH
    audited: bool | None = None  # the worker audited the run (orchestrator.worker.run_audit); None: not
    worktree: str | None = None  # the checkout the bench ran in
    audit_modules: dict | None = None  # module -> the file(s) it was imported from (None: never)
    elapsed_s: float | None = None  # the run's duration on a monotonic clock
    lock_wait_s: float | None = None  # how long the run waited for its host lock (None: never got it)
    suite_run_key: str | None = None  # the suite run this case's numbers were read from (None: its own)
    bad_input: str | None = None  # why the run failed because of the sweep's input (exit 2 at the client)
    cases: list[tuple[PlannedRun, RunResult]] | None = None  # a suite run's cases, each a run of its own
    # a lockstep sweep's run: the order it ran in (lockstep, or interleaved where the case fell back),
    # why it fell back, and its blocks (analysis.block_pairs)
    ran_in: str | None = None
    fallback: str | None = None
    blocks: list[dict] | None = None
    quiet: QuietWait | None = None  # how the wait for a quiet host before it ended (None: no quiet:)

    def __post_init__(self) -> None:
        check_status(self.status)

    @property
    def wall_s(self) -> float:
        """The run's duration: ``elapsed_s`` (monotonic, what every sum of durations uses), else, for a
        result made without one, the difference of the wall timestamps."""
        if self.elapsed_s is not None:
            return self.elapsed_s
        return (self.ended_at - self.started_at).total_seconds()

    @property
    def throughput(self) -> float | None:
        return _float_or_none((self.summary or {}).get("throughput"))

    @property
    def measure_wall_s(self) -> float | None:
        """The measured window's seconds, where the bench's protocol reports one."""
        return _float_or_none((self.summary or {}).get("measure_wall_s"))

    @property
    def reported(self) -> list[str]:
        """The metric names this run has a value of: throughput, phases, other metrics."""
        values = {"throughput": self.throughput, **summary_phase_means(self.summary),
                  **summary_metrics(self.summary)}
        return sorted(name for name, value in values.items() if value is not None)


def block_spans(blocks: Iterable[dict]) -> list[dict]:
    """A lockstep round's blocks (each with ``side``, ``started``, ``ended`` epoch seconds, ``warmup``)
    as spans from the round's first start, as the live board and the report draw them: ``side``,
    ``left``, ``right`` (s), ``warmup``, ``block``, ``cycle``, ``wall_s``; blocks without finite times
    left out (rows an older shasweep stored with ``Infinity`` there)."""
    timed = [b for b in blocks if all(isinstance(b.get(k), int | float) and not isinstance(b.get(k), bool)
                                      and math.isfinite(b[k]) for k in ("started", "ended"))]
    origin = min((b["started"] for b in timed), default=0.0)
    return [{"side": b.get("side"), "left": b["started"] - origin, "right": b["ended"] - origin,
             "warmup": bool(b.get("warmup")), "block": b.get("block"), "cycle": b.get("cycle"),
             "wall_s": b.get("wall_s")} for b in timed]
