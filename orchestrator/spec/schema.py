"""The sweep YAML's schema as omegaconf structured configs: plain dataclasses with their defaults.

Loading, overrides and validation are ``orchestrator.spec.load``'s job; this module holds only the
shapes and the defaults (docs/sweep-yaml.md, "Every key").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from orchestrator.capabilities import PROTOCOL_NAME

MISSING = "???"  # omegaconf's mark of a mandatory value (omegaconf.MISSING), without importing it

# Placeholders every command may use; every ``params.<name>`` is one too, and ``{algo} {task} {sim}``
# are the parts of a case of the form ``algo/task/sim``
# (docs/sweep-yaml.md, "The command and its placeholders").
BUILTIN_PLACEHOLDERS: tuple[str, ...] = (
    "python", "stream", "result", "worktree", "sweep_dir", "case", "variant", "threads",
)
CASE_PLACEHOLDERS: tuple[str, ...] = ("algo", "task", "sim")
# The placeholders a ``prepare`` command may use (it runs once per SHA, not per run).
PREPARE_PLACEHOLDERS: tuple[str, ...] = ("python", "worktree", "sweep_dir")

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


class Protocol(Enum):
    """How the orchestrator reads a bench run (docs/design.md, "Protocols"): a built-in protocol below,
    or the name of one a package registers (``orchestrator.capabilities.registered``). Any protocol
    name is a member (made on first use), so a recorded sweep of a protocol not installed here still
    loads; ``spec.load`` checks that the name is registered (exit 2 naming the registered ones)."""

    v1 = "v1"  # NDJSON records streamed to {stream}
    json = "json"  # one JSON document written to {result}, mapped by the ``json`` block
    time = "time"  # the whole command timed from outside, like hyperfine
    pyperf = "pyperf"  # the JSON ``pyperf ... -o {result}`` writes
    pytest_benchmark = "pytest-benchmark"  # the JSON ``pytest --benchmark-json={result}`` writes
    gbench = "gbench"  # the JSON Google Benchmark writes (``--benchmark_out={result}``)

    @classmethod
    def _missing_(cls, value: object) -> Protocol | None:
        """A member for any other protocol name (letters, digits, ``_.-``), made once."""
        if not isinstance(value, str) or not PROTOCOL_NAME.match(value):
            return None
        member = object.__new__(cls)
        member._name_, member._value_ = value, value
        return cls._value2member_map_.setdefault(value, member)  # type: ignore[return-value]


class Order(Enum):
    """How runs are ordered: see ``orchestrator.plan.expand``."""

    interleaved = "interleaved"
    serial = "serial"
    randomized = "randomized"
    lockstep = "lockstep"  # a round's processes resident at once, taking turns block by block


class Fallback(Enum):
    """What a lockstep sweep does with a case whose bench, at some SHA, has no control channel."""

    stop = "stop"  # stop the sweep, naming the SHA (exit 2)
    interleaved = "interleaved"  # run that case's rounds as separate processes, one at a time


@dataclass
class LockstepSpec:
    """``order: lockstep``: how a round's steps are cut (docs/design.md, "Run protocol", control channel)."""

    block_steps: int | None = None  # measured steps per block (default: a bench's 5, a suite's 2)
    blocks: int | None = None  # measured blocks per side and round (default: a bench's 8, a suite's 16)
    block_warmup: int = 1  # warm-up steps before each measured block, in the same turn
    fallback: Fallback = Fallback.stop
    step_ms: float = 10.0  # a suite's benchmarks: calls per step calibrated to take about this long


@dataclass
class QuietSpec:
    """Wait before each round (a lockstep round, or each run) until the host was quiet for a second."""

    max_load: float = 0.25  # busy CPUs over the last second
    max_steal: float = 0.02  # share of CPU time stolen by the hypervisor over the last second
    max_wait_s: float = 60.0  # then run anyway (the run records that the limits were not met)


class Instrument(Enum):
    """What else each round measures (docs/design.md, "Instruction counts")."""

    none = "none"
    valgrind = "valgrind"  # one more process per side under callgrind: instructions per step or call


class NoiseMode(Enum):
    """Whose run noise a gate's interval uses: see ``orchestrator.analysis.intervals``."""

    cell = "cell"  # each (case, side) comparison its own
    pooled = "pooled"  # the sweep's, pooled over every cell of the metric


class Spending(Enum):
    """How an adaptive sweep's looks share a gate's error rate: see ``orchestrator.analysis.spending``."""

    pocock = "pocock"  # Lan-DeMets, Pocock-type: spends evenly in time (fewest rounds in simulation)
    obrien_fleming = "obrien-fleming"  # Lan-DeMets, O'Brien-Fleming-type: little early, most at the end
    even = "even"  # Bonferroni: each look a share in proportion to its rounds (the design before the key)


@dataclass
class SideSpec:
    """One side of the A/B: a git ref plus a dotlist over ``variant``, ``params.*`` and ``env.*``."""

    ref: str = MISSING
    overrides: list[str] = field(default_factory=list)
    python: str | None = None  # the interpreter running this side's benches; None: the sweep's ``python``


@dataclass
class ParamsSpec:
    """Bench parameters passed through the command placeholders."""

    num_envs: int = 1024
    warmup: int = 10
    measure: int = 100
    replay_capacity: int = 64
    seed: int = 0
    threads: int = 0  # 0 = every CPU in the bench worker's affinity
    actions: str | None = None  # actor | pregenerated; passed as --actions only when set
    device: str | None = None  # the actor's device, cpu | cuda; passed as --device only when set


# envruntime's bench options that its default command passes only when the sweep sets them, so a
# SHA whose bench predates them still runs; their values as ``envruntime.collect.policy`` has them.
ENVRUNTIME_OPTIONAL: dict[str, tuple[str, ...]] = {"actions": ("actor", "pregenerated"),
                                                   "device": ("cpu", "cuda")}


# The share of a ``within`` gate's error rate its PASS (an equivalence claim) may spend; its FAIL
# spends the rest (``analysis.verdicts.claim_alphas``).
EQUIVALENCE_PASS_SHARE = 0.75


@dataclass
class GateSpec:
    """``side median / baseline median`` of ``metric`` must lie within [min_ratio, max_ratio], or
    (an equivalence gate) within [1 - within, 1 + within]."""

    metric: str = MISSING
    min_ratio: float | None = None
    max_ratio: float | None = None
    within: float | None = None  # equivalence: PASS inside [1 - within, 1 + within], FAIL outside
    case: str | None = None  # only this case (default: every case)
    side: str | None = None  # only this side (default: every non-baseline side)
    confidence: float = 0.95  # of the interval the verdict is read from

    @property
    def bounds(self) -> list[tuple[str, float]]:
        """``(">=", low)`` and/or ``("<=", high)``: ``within`` is both, ``1 - within`` and ``1 + within``."""
        if self.within is not None:
            return [(">=", 1 - self.within), ("<=", 1 + self.within)]
        return ([(">=", self.min_ratio)] if self.min_ratio is not None else []) + (
            [("<=", self.max_ratio)] if self.max_ratio is not None else [])

    def describe(self) -> str:
        """``>= 0.97x``, ``>= 0.9x and <= 1.1x`` or ``within [0.97x, 1.03x]``."""
        if self.within is not None:
            return f"within [{1 - self.within:g}x, {1 + self.within:g}x]"
        return " and ".join(f"{op} {value:g}x" for op, value in self.bounds)


@dataclass
class WaiverSpec:
    """An accepted exception: a FAIL of gate ``gate`` (default: every gate) in ``case`` on ``side``
    (default: every non-baseline side) no longer fails the sweep; ``reason`` says why."""

    case: str = MISSING
    reason: str = MISSING
    side: str | None = None
    gate: int | None = None  # index into ``gates``
    by: str | None = None  # who accepted it


@dataclass
class KnownNames:
    """Names the benchmarked repo accepts; an empty list accepts any name (checked only syntactically).

    A list left unset (None) means envruntime's names for envruntime's default command and no check
    for any other command (``ENVRUNTIME_KNOWN``).
    """

    algos: list[str] | None = None
    tasks: list[str] | None = None
    sims: list[str] | None = None
    variants: list[str] | None = None


ENVRUNTIME_KNOWN = KnownNames(
    algos=["sac", "flashsac"], tasks=["go2_joystick_flat", "g1_walk_flat", "g1_motion_tracking"],
    sims=["mujoco", "motrix", "mjwarp"], variants=["manager", "direct"],
)


@dataclass
class JsonMapping:
    """Where a ``protocol: json`` bench's result document holds its numbers: dotted paths whose
    integer parts index lists, e.g. ``results.0.phase_ms.env_step_ms.samples_ms``."""

    throughput: str | None = None  # optional where a gate checks a mapped phase or metric
    phases: dict[str, str] = field(default_factory=dict)  # <name>_ms -> path
    metrics: dict[str, str] = field(default_factory=dict)  # any other number: column name -> path
    versions: str | None = None  # path to an object {package: version} the bench reports
    measure_wall_s: str | None = None  # path to the measured window's seconds (the throughput cross-check)


@dataclass
class SweepSpec:
    """A whole sweep as written in YAML (docs/sweep-yaml.md, "Every key")."""

    name: str = MISSING
    repo: str | None = None  # default: the git repository the command runs in
    sides: dict[str, SideSpec] = field(default_factory=dict)
    baseline: str = MISSING
    cases: list[str] = field(default_factory=list)
    variant: str = "manager"
    # Free-form: every key is a placeholder. envruntime's default command gets ``ParamsSpec``'s keys,
    # defaults and checks (and only those keys).
    params: dict[str, Any] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    repeats: int = 3
    order: Order = Order.interleaved
    order_seed: int = 0
    gates: list[GateSpec] = field(default_factory=list)
    waivers: list[WaiverSpec] = field(default_factory=list)  # accepted exceptions, declared up front
    # report table rows, in order; unset: REPORT_METRICS for envruntime's default command, else
    # throughput and every phase and metric the runs reported
    metrics: list[str] | None = None
    timeout_s: float = 600.0
    max_steps: int | None = None  # a run whose bench reports more steps fails, naming this key; None: no cap
    # the most MiB a {result} document may hold, watched while the bench runs; None: the protocol's
    # default (64 for json, read whole; 1024 for the suites, read incrementally)
    max_result_mib: int | None = None
    continue_on_error: bool = False
    aa: bool = False  # sides may run one commit with the same settings: no warning (spec.identical_sides)
    hosts: Any = "one"  # "one", "all" or a list of host ids: where rounds run (dispatch.host_choice)
    max_repeats: int | None = None  # adaptive rounds up to this many (default: repeats, a fixed sweep)
    budget_s: float | None = None  # no further adaptive round once the runs took this long (bench wall)
    spending: Spending = Spending.pocock  # how the looks of an adaptive sweep share a gate's error rate
    noise: NoiseMode = NoiseMode.cell
    rerun_disturbed: bool = False  # run a run again once when the host disturbed it
    drift_threshold: float = 0.03  # flag a side whose median moved more than this against its history
    command: list[str] = field(default_factory=lambda: list(DEFAULT_COMMAND))
    # worktree-relative directories put first on the bench's PYTHONPATH, in order (src layout: [src])
    pythonpath: list[str] = field(default_factory=lambda: ["."])
    results: str = "results"  # relative: to the git repository the command runs in
    # the interpreter ({python}) running the benches: a file or a virtual environment's directory
    # (spec.interpreters); None: the bench worker's own
    python: str | None = None
    known: KnownNames = field(default_factory=KnownNames)
    protocol: Protocol = Protocol.v1
    json: JsonMapping | None = None  # required for (and only for) protocol: json
    # must be imported from the SHA's worktree; unset: the protocol's default (json, time: every package
    # of the worktree's pythonpath directories the bench imported); []: no module audit
    audit_modules: list[str] | None = None
    prepare: list[list[str]] = field(default_factory=list)  # argvs run once per new worktree
    lockstep: LockstepSpec | None = None  # order: lockstep's blocks (its defaults when not given)
    quiet: QuietSpec | None = None  # wait for a quiet host before each round; None: never wait
    submodules: bool = False  # check out the SHA's submodules (at the commits it records) in its worktree
    instrument: Instrument = Instrument.none  # valgrind: count each round's instructions too

    @property
    def max_rounds(self) -> int:
        """The most rounds the sweep may run: ``max_repeats``, or ``repeats`` for a fixed sweep."""
        return max(self.repeats, self.max_repeats or self.repeats)

    @property
    def adaptive(self) -> bool:
        """Whether rounds after ``repeats`` run while a gate is undecided (``dispatch.adaptive``)."""
        return self.max_rounds > self.repeats


@dataclass
class RunSettings:
    """The per-run keys a side may override."""

    variant: str
    params: dict[str, Any]
    env: dict[str, str]


@dataclass(frozen=True)
class Case:
    """The parts of a case string of the form ``algo/task/sim``."""

    algo: str
    task: str
    sim: str

    @property
    def name(self) -> str:
        return f"{self.algo}/{self.task}/{self.sim}"
