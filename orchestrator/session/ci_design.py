"""The sweep ``shasweep ci`` runs: the best design the found suite allows (docs/ci.md, "The design").

``design_sweep`` is the one place that decides it, from what the protocols declare
(``capabilities.describe``), never from a list of its own:

- sides ``base`` (the merge base, the baseline) and ``head``; one case per benchmark (``discover``);
- ``order: lockstep`` where the suite's protocol takes the control channel (the sides' processes
  resident at once, taking turns block by block: the least noise), else ``interleaved`` rounds
  paired by round;
- adaptive rounds: a first look after ``MIN_ROUNDS`` rounds (the only ones planned, so a slow machine
  overruns the budget by as little as it can), then one round at a time while a gate is undecided,
  up to the rounds the time budget holds (``max_repeats``); the command's deadline stops them
  earlier when the rounds run slower than estimated;
- the project's gates (``tool.shasweep.gates``), else one: the time per call (per step) may grow by
  at most ``DEFAULT_MAX_RATIO``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from orchestrator.capabilities import CPU_TIME_METRIC, TIME_METRIC, Capability, describe
from orchestrator.errors import InvalidInputError
from orchestrator.plan.ci_commits import CiCommits
from orchestrator.plan.suite_discovery import FoundSuite
from orchestrator.spec.ci_config import CiConfig
from orchestrator.spec.load import read_yaml, spec_from_config
from orchestrator.spec.schema import SweepSpec

SWEEP_NAME = "ci"
BASE, HEAD = "base", "head"
DEFAULT_MAX_RATIO = 1.02  # a slowdown the interval puts beyond 2 % fails the gate
SETUP_S = 20.0  # the cluster's start and two checkouts: the budget's part outside the rounds
MIN_ROUNDS = 2  # an interval needs two rounds; the first look at the gates is after them, and every
# later round is an adaptive one, which starts only when the deadline holds it
MAX_ROUNDS = 100
RUN_START_S = 3.0  # a suite process's start, imports and collection, when no earlier sweep says
PER_BENCHMARK_S = {"pytest-benchmark": 0.25, "pyperf": 3.0, "gbench": 1.0, "benchkit": 5.0, "sweep": 5.0}
PYTEST_ARGS = ("--benchmark-only", "--benchmark-json={result}", "--benchmark-max-time=0.1",
               "--benchmark-timer=time.process_time")  # CPU time per call: a shared runner blurs it less
PYPERF_ARGS = ("--quiet", "--processes", "2", "--values", "3")
GBENCH_ARGS = ("--benchmark_out={result}", "--benchmark_out_format=json", "--benchmark_repetitions=3")
GATE_METRIC = {"pytest-benchmark": TIME_METRIC, "pyperf": TIME_METRIC, "gbench": CPU_TIME_METRIC,
               "benchkit": "step_ms"}


@dataclass(frozen=True)
class RoundEstimate:
    """How long one round (every side once) is expected to take, and from what."""

    seconds: float
    source: str


@dataclass(frozen=True)
class CiDesign:
    """The sweep as a plain mapping (``shasweep ci --plan`` prints it as YAML) and validated, with the
    time model its rounds were sized by."""

    config: dict[str, Any]
    spec: SweepSpec
    estimate: RoundEstimate
    min_budget_s: float
    notes: tuple[str, ...] = field(default=())

    @property
    def order(self) -> str:
        return self.spec.order.value


def design_sweep(found: FoundSuite, config: CiConfig, commits: CiCommits, budget_s: float, repo: Path,
                 history: Callable[[list[str]], float | None] | None = None) -> CiDesign:
    """The sweep of ``found`` comparing ``commits``: order, rounds within ``budget_s`` and gates. The
    rounds are sized by ``history(command)`` (a round's seconds in an earlier ci sweep of that
    command, None if there is none) or else by the suite's size. ``InvalidInputError`` naming
    ``--budget`` when not even ``MIN_ROUNDS`` rounds fit."""
    raw = _sweep_file(found, repo) if found.kind == "sweep" else _suite_sweep(found, config)
    earlier = history(list(raw.get("command", []))) if history else None
    estimate = (RoundEstimate(earlier, "the last ci sweep of this suite") if earlier
                else _static_estimate(found))
    minimum = SETUP_S + MIN_ROUNDS * estimate.seconds
    if budget_s < minimum:
        raise InvalidInputError(
            f"{_duration(budget_s)} is less than the {_duration(minimum)} one comparison needs here: about "
            f"{SETUP_S:g} s to start, and {MIN_ROUNDS} rounds of ~{estimate.seconds:.1f} s "
            f"({estimate.source}); give --budget {_duration(math.ceil(minimum))} or more", "--budget")
    rounds = min(int((budget_s - SETUP_S) // estimate.seconds), MAX_ROUNDS)
    repeats = MIN_ROUNDS
    raw.update({"sides": {BASE: {"ref": commits.merge_base}, HEAD: {"ref": commits.head}}, "baseline": BASE,
                "aa": commits.same, "timeout_s": min(float(raw.get("timeout_s", budget_s)), budget_s)})
    if found.kind != "sweep" or "max_repeats" not in raw:
        raw.update({"repeats": repeats, "max_repeats": max(rounds, repeats)})
    if config.gates:
        raw["gates"] = [dict(gate) for gate in config.gates]
    spec = spec_from_config(OmegaConf.create(raw))
    return CiDesign(config=raw, spec=spec, estimate=estimate, min_budget_s=minimum,
                    notes=tuple(f"also found {other}: not run (tool.shasweep.suite chooses)"
                                for other in found.also_found))


def _suite_sweep(found: FoundSuite, config: CiConfig) -> dict[str, Any]:
    """The keys of a sweep of a found suite: protocol, command, cases, order, the default gate."""
    protocol, command, cases = _command(found, config)
    info = describe(protocol)
    if found.marker_only and not info.has(Capability.CONTROL_CHANNEL):
        raise InvalidInputError(
            f"{', '.join(found.marker_only)}: pytest-codspeed's benchmark marker without the benchmark "
            "fixture is measured only in lockstep, which this shasweep does not run for pytest suites; "
            "take the benchmark fixture in those tests", "tool.shasweep.paths")
    lockstep = info.has(Capability.CONTROL_CHANNEL) and not (found.kind == "pyperf" and len(found.paths) > 1)
    raw: dict[str, Any] = {
        "name": SWEEP_NAME, "protocol": protocol, "command": command, "cases": cases,
        "order": "lockstep" if lockstep else "interleaved", "results": config.results,
        "gates": [{"metric": GATE_METRIC[found.kind], "max_ratio": DEFAULT_MAX_RATIO}],
        "prepare": [list(argv) for argv in config.prepare]}
    if config.pythonpath:
        raw["pythonpath"] = list(config.pythonpath)
    if found.kind == "benchkit":
        raw["params"] = {"warmup": 2, "measure": 20}
    if found.kind in ("pytest-benchmark", "benchkit"):
        raw["env"] = {"PYTHONHASHSEED": "0"}  # one seed: a set's or dict's layout adds no per-process noise
    return raw


def _command(found: FoundSuite, config: CiConfig) -> tuple[str, list[str], Any]:
    """(protocol, command, cases) of each kind of suite."""
    args = list(config.args)
    if found.kind == "pytest-benchmark":
        return ("pytest-benchmark", ["{python}", "-m", "pytest", "-q", "-p", "no:cacheprovider", *found.paths,
                                     *PYTEST_ARGS, *args], "discover")
    if found.kind == "pyperf":
        if len(found.paths) == 1:
            return "pyperf", ["{python}", found.paths[0], *PYPERF_ARGS, "-o", "{result}", *args], "discover"
        return "pyperf", ["{python}", "-m", "orchestrator.suitekit.pyperf_scripts", "--out", "{result}",
                          *found.paths, "--", *PYPERF_ARGS, *args], "discover"
    if found.kind == "gbench":
        if len(found.paths) > 1:
            raise InvalidInputError(f"names {len(found.paths)} binaries; a ci sweep runs one",
                                    "tool.shasweep.gbench")
        return "gbench", [f"{{worktree}}/{found.paths[0]}", *GBENCH_ARGS, *args], "discover"
    bench = ["{python}", "{case}", "--stream", "{stream}", "--control", "{control}", *args]
    return "v1", bench, list(found.paths)


def _sweep_file(found: FoundSuite, repo: Path) -> dict[str, Any]:
    """The project's own sweep YAML, as a plain mapping (its sides are replaced by base and head)."""
    return dict(OmegaConf.to_container(read_yaml(repo / found.paths[0]), resolve=False))  # type: ignore[arg-type]


def _static_estimate(found: FoundSuite) -> RoundEstimate:
    """A round's time from the suite's size when no earlier sweep says: each side's process start
    and its benchmark functions at a typical time each."""
    per = PER_BENCHMARK_S[found.kind]
    seconds = 2 * (RUN_START_S + per * max(found.benchmarks, 1))
    return RoundEstimate(seconds, f"{found.benchmarks} benchmark functions at ~{per:g} s each, 2 sides")


def _duration(seconds: float) -> str:
    """``45s``, ``1m30s``, ``10m``."""
    minutes, rest = divmod(int(round(seconds)), 60)
    return f"{minutes}m{rest}s" if minutes and rest else f"{minutes}m" if minutes else f"{rest}s"
