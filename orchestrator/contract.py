"""The names the client, the scheduler's board and the bench worker share, and nothing else.

``PlannedRun`` is everything the worker needs to run one bench process; it crosses the Dask
boundary by pickling, so it holds only plain data. ``StepRecord`` and ``HostRecord`` are what the
worker hands the store; the topic and event names are how progress and cancellation travel.
Imports nothing of the orchestrator (see docs/design.md, "Code layout").
"""

from __future__ import annotations

import os
import platform
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field

AUDIT_FAILED = "audit_failed"  # ran to the end, but failed its audit (orchestrator.worker.run_audit)
STATUSES: tuple[str, ...] = ("ok", "failed", "timeout", "cancelled", AUDIT_FAILED)
PROTOCOL_VERSION = 1  # the run protocol version this orchestrator reads (docs/design.md, "Run protocol")
PROGRESS_TOPIC = "shasweep-progress"  # Worker.log_event topic of the bench worker's progress events
RUN_KEY_VAR = "SHASWEEP_RUN_KEY"  # in the bench's environment, inherited by every process it starts
HOST_ID_VAR = "SHASWEEP_HOST_ID"


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


@dataclass
class HostRecord:
    """One bench host; every field keeps its type (None where unknown) so Parquet schemas stay stable."""

    hostname: str
    cpu_model: str
    cpu_logical: int
    cpu_physical: int | None
    ram_gib: float
    gpu_name: str | None
    gpu_memory_mib: int | None
    gpu_driver: str | None
    os: str
    kernel: str
    python: str
    versions: str  # JSON object: package -> version or null
    threads: str  # JSON object: thread variable -> value or null
    affinity: str  # CPU list, e.g. "0-3,8"
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

    def as_dict(self) -> dict:
        return asdict(self)


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
    # order: lockstep: block_steps, blocks, block_warmup, fallback (stop | interleaved) and, where the
    # plan added the control option to envruntime's command, plain_argv (the template without it);
    # empty for every other order (docs/design.md, "Run protocol", control channel)
    lockstep: dict = field(default_factory=dict)
    quiet: dict = field(default_factory=dict)  # the sweep's quiet: max_load, max_steal, max_wait_s; {}: none
    max_steps: int | None = None  # a run reporting more steps fails (the sweep's max_steps); None: no cap

    def to_dict(self) -> dict:
        """Plain-dict form (for JSON and Parquet columns)."""
        return asdict(self)

    def outcome(self, **fields: object) -> dict:
        """The outcome dict the dispatcher records for this run: its identity, every result field
        None, then ``fields`` (``status``, ``error``, ``throughput``, ...)."""
        return {"run_key": self.run_key, "order": self.order, "side": self.side, "case": self.case,
                "sha": self.sha, "repeat": self.repeat, "host_id": None, "status": None, "error": None,
                "throughput": None, "wall_s": None, "exit_code": None, **fields}


def block_spans(blocks: Iterable[dict]) -> list[dict]:
    """A lockstep round's blocks (each with ``side``, ``started``, ``ended`` epoch seconds, ``warmup``)
    as spans from the round's first start, as the live board and the report draw them: ``side``,
    ``left``, ``right`` (s), ``warmup``, ``block``, ``cycle``, ``wall_s``; blocks without times left out."""
    timed = [b for b in blocks if all(isinstance(b.get(k), int | float) and not isinstance(b.get(k), bool)
                                      for k in ("started", "ended"))]
    origin = min((b["started"] for b in timed), default=0.0)
    return [{"side": b.get("side"), "left": b["started"] - origin, "right": b["ended"] - origin,
             "warmup": bool(b.get("warmup")), "block": b.get("block"), "cycle": b.get("cycle"),
             "wall_s": b.get("wall_s")} for b in timed]
