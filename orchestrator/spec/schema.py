"""The sweep YAML's schema as omegaconf structured configs: plain dataclasses with their defaults.

Loading, overrides and validation are ``orchestrator.spec.load``'s job; this module holds only the
shapes and the defaults (README, "Sweep YAML reference").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from omegaconf import MISSING

PLACEHOLDERS: tuple[str, ...] = (
    "python", "algo", "task", "sim", "variant", "num_envs", "warmup", "measure",
    "replay_capacity", "seed", "threads", "stream",
)

DEFAULT_COMMAND: tuple[str, ...] = (
    "{python}", "-m", "envruntime.bench", "--algo", "{algo}", "--task", "{task}", "--sim", "{sim}",
    "--variant", "{variant}", "--num-envs", "{num_envs}", "--warmup", "{warmup}", "--measure", "{measure}",
    "--replay-capacity", "{replay_capacity}", "--seed", "{seed}", "--threads", "{threads}",
    "--stream", "{stream}",
)

# Metrics a report tabulates for every case and side by default (the sweep's ``metrics`` key);
# gates may use any numeric run column.
HOSTS_CHOICES: tuple[str, ...] = ("one", "all")  # besides a list of host ids

REPORT_METRICS: tuple[str, ...] = ("throughput", "physics_ms", "update_state_ms", "reset_done_ms", "d2h_ms")


class Order(Enum):
    """How runs are ordered: see ``orchestrator.plan.expand``."""

    interleaved = "interleaved"
    serial = "serial"
    randomized = "randomized"


@dataclass
class SideSpec:
    """One side of the A/B: a git ref plus a dotlist over ``variant``, ``params.*`` and ``env.*``."""

    ref: str = MISSING
    overrides: list[str] = field(default_factory=list)


@dataclass
class ParamsSpec:
    """Bench parameters passed through the command placeholders."""

    num_envs: int = 1024
    warmup: int = 10
    measure: int = 100
    replay_capacity: int = 64
    seed: int = 0
    threads: int = 0  # 0 = every CPU in the bench worker's affinity


@dataclass
class GateSpec:
    """``side median / baseline median`` of ``metric`` must lie within [min_ratio, max_ratio]."""

    metric: str = MISSING
    min_ratio: float | None = None
    max_ratio: float | None = None
    case: str | None = None  # only this case (default: every case)
    side: str | None = None  # only this side (default: every non-baseline side)
    confidence: float = 0.95  # of the bootstrap interval the verdict is read from


@dataclass
class KnownNames:
    """Names the benchmarked repo accepts; an empty list accepts any name (checked only syntactically)."""

    algos: list[str] = field(default_factory=lambda: ["sac", "flashsac"])
    tasks: list[str] = field(
        default_factory=lambda: ["go2_joystick_flat", "g1_walk_flat", "g1_motion_tracking"])
    sims: list[str] = field(default_factory=lambda: ["mujoco", "motrix", "mjwarp"])
    variants: list[str] = field(default_factory=lambda: ["manager", "direct"])


@dataclass
class SweepSpec:
    """A whole sweep as written in YAML (see README, "Sweep YAML reference")."""

    name: str = MISSING
    repo: str | None = None  # default: the git repository the command runs in
    sides: dict[str, SideSpec] = field(default_factory=dict)
    baseline: str = MISSING
    cases: list[str] = field(default_factory=list)
    variant: str = "manager"
    params: ParamsSpec = field(default_factory=ParamsSpec)
    env: dict[str, str] = field(default_factory=dict)
    repeats: int = 3
    order: Order = Order.interleaved
    order_seed: int = 0
    gates: list[GateSpec] = field(default_factory=list)
    metrics: list[str] = field(default_factory=lambda: list(REPORT_METRICS))  # report table rows, in order
    timeout_s: float = 600.0
    continue_on_error: bool = False
    hosts: Any = "one"  # "one", "all" or a list of host ids: where rounds run (orchestrator.dispatch.hosts)
    bootstrap_resamples: int = 9999  # resamples of every bootstrap interval in the report
    bootstrap_seed: int = 0  # the same seed gives the same intervals
    drift_threshold: float = 0.03  # flag a side whose median moved more than this against its history
    command: list[str] = field(default_factory=lambda: list(DEFAULT_COMMAND))
    results: str = "results"  # relative: to the git repository the command runs in
    known: KnownNames = field(default_factory=KnownNames)


@dataclass
class RunSettings:
    """The per-run keys a side may override."""

    variant: str
    params: ParamsSpec
    env: dict[str, str]


@dataclass(frozen=True)
class Case:
    """A parsed ``algo/task/sim`` case string."""

    algo: str
    task: str
    sim: str

    @property
    def name(self) -> str:
        return f"{self.algo}/{self.task}/{self.sim}"
