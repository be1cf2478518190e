"""The names the client, the scheduler's board and the bench worker share, and nothing else.

``PlannedRun`` is everything the worker needs to run one bench process; it crosses the Dask
boundary by pickling, so it holds only plain data. ``StepRecord`` and ``HostRecord`` are what the
worker hands the store; the topic and event names are how progress and cancellation travel.
Imports nothing of the orchestrator (see docs/design.md, "Code layout").
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

STATUSES: tuple[str, ...] = ("ok", "failed", "timeout", "cancelled")
PROTOCOL_VERSION = 1  # the run protocol version this orchestrator reads (docs/design.md, "Run protocol")
PROGRESS_TOPIC = "shasweep-progress"  # Worker.log_event topic of the bench worker's progress events
RUN_KEY_VAR = "SHASWEEP_RUN_KEY"  # in the bench's environment, inherited by every process it starts


def cancel_event_name(sweep_id: str) -> str:
    """Name of the Dask ``Event`` that, once set, stops the sweep's running bench."""
    return f"shasweep-cancel-{sweep_id}"


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
    case: str  # "algo/task/sim"
    algo: str
    task: str
    sim: str
    variant: str
    repeat: int
    repo: str  # absolute path of the git repository the SHA lives in
    argv_template: tuple[str, ...]  # placeholders: see orchestrator.spec.load.PLACEHOLDERS
    params: dict = field(default_factory=dict)  # num_envs, warmup, measure, replay_capacity, seed, threads
    env: dict = field(default_factory=dict)  # extra environment variables for the bench process
    timeout_s: float = 600.0
    results_root: str = "results"

    def to_dict(self) -> dict:
        """Plain-dict form (for JSON and Parquet columns)."""
        return asdict(self)
