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
  earlier when the rounds run slower than estimated, and stops a round still running at it (not
  counted: ``first_round_check`` when it was the first);
- the O'Brien-Fleming boundary (``SPENDING``) unless a project's sweep file names another: a pull
  request's cases are mostly unchanged ones that stay undecided to the budget's last rounds, so the
  error rate is best spent there (``tests/orchestrator/test_sequential.py`` measures the gain);
- the project's gates (``tool.shasweep.gates``), else one: the time per call (per step) may grow by
  at most ``DEFAULT_MAX_RATIO``, at the confidence ``1 - ALPHA / K`` for the suite's K benchmarks:
  a pull request fails when any case does, so the cases share the error rate (15 gates at 95 %
  each, with the noise at the bound, would FAIL somewhere in about a third of the sweeps);
- each round's str-hash seed drawn for all its sides, a new one each round (``worker.bench_env``),
  as in any sweep: a change's effect on where str keys collide is read over seeds, not at one;
- the instrument the project asks for (``tool.shasweep.instrument``, ``--instrument``): ``valgrind``
  counts each benchmark's instructions too, in a process per side and round that the round's
  estimate includes, and the default gate bounds them as it bounds the time (a count does not move
  with the runner's load: a slowdown of the work FAILs at the first look).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from orchestrator.capabilities import CPU_TIME_METRIC, INSTRUCTIONS_METRIC, TIME_METRIC, Capability, describe
from orchestrator.errors import InvalidInputError
from orchestrator.plan.ci_commits import CiCommits
from orchestrator.plan.suite_discovery import FoundSuite
from orchestrator.spec.ci_config import CiConfig
from orchestrator.spec.load import read_yaml, spec_from_config
from orchestrator.spec.record import SweepRecord
from orchestrator.spec.schema import Instrument, Spending, SweepSpec

SWEEP_NAME = "ci"
BASE, HEAD = "base", "head"
DEFAULT_MAX_RATIO = 1.02  # a slowdown the interval puts beyond 2 % fails the gate
ALPHA = 0.05  # the chance that some case of the suite is wrongly judged: shared by its cases (Bonferroni)
SETUP_S = 20.0  # the cluster's start and two checkouts: the budget's part before the rounds
OUTPUTS_S = 20.0  # closing the cluster and writing the report, page and CI files: its part after them
# (9-16 s measured for a 15-benchmark suite: the report files 9 s after the last round, the page 7 s more)
SPENDING = Spending.obrien_fleming  # most of the error rate at the last looks, where a ci sweep decides
MIN_ROUNDS = 2  # an interval needs two rounds; the first look at the gates is after them, and every
# later round is an adaptive one, which starts only when the deadline holds it
MAX_ROUNDS = 100
RUN_START_S = 3.0  # a suite process's start, imports and collection, when no earlier sweep says
SWEEP_FILE_S = 5.0  # a project's own sweep: a run's time, when no earlier sweep says
# instrument: valgrind adds a process per side and round under callgrind, ~50x slower than native:
# its start (imports and collection; `import pytest` took 12 s here under it) and a warm-up and two
# steps of each benchmark; when no earlier sweep says
VALGRIND_START_S = 25.0
VALGRIND_PER_BENCHMARK_S = 4.0  # a 15-benchmark suite's instrumented process took 77-98 s per side
PYTEST_ARGS = ("--benchmark-only", "--benchmark-json={result}", "--benchmark-max-time=0.1",
               "--benchmark-timer=time.process_time")  # CPU time per call: a shared runner blurs it less
PYPERF_ARGS = ("--quiet", "--processes", "2", "--values", "3")
GBENCH_ARGS = ("--benchmark_out={result}", "--benchmark_out_format=json", "--benchmark_repetitions=3")


@dataclass(frozen=True)
class SuiteCommand:
    """How a kind of suite runs: its argv, its cases, and whether one process of the tool runs them
    all (only then can lockstep keep it resident)."""

    argv: list[str]
    cases: Any
    one_process: bool = True


@dataclass(frozen=True)
class SuiteKind:
    """What a ci sweep of one kind of suite is: the protocol that reads it, the metric its default
    gate bounds, a benchmark function's typical seconds (for the first round estimate), its command
    and params."""

    protocol: str
    gate_metric: str
    per_benchmark_s: float
    command: Callable[[FoundSuite, list[str]], SuiteCommand]
    params: dict[str, Any] = field(default_factory=dict)


def _pytest_command(found: FoundSuite, args: list[str]) -> SuiteCommand:
    return SuiteCommand(["{python}", "-m", "pytest", "-q", "-p", "no:cacheprovider", *found.paths,
                         *PYTEST_ARGS, *args], "discover")


def _pyperf_command(found: FoundSuite, args: list[str]) -> SuiteCommand:
    if len(found.paths) == 1:
        return SuiteCommand(["{python}", found.paths[0], *PYPERF_ARGS, "-o", "{result}", *args], "discover")
    return SuiteCommand(["{python}", "-m", "orchestrator.suitekit.pyperf_scripts", "--out", "{result}",
                         *found.paths, "--", *PYPERF_ARGS, *args], "discover", one_process=False)


def _gbench_command(found: FoundSuite, args: list[str]) -> SuiteCommand:
    if len(found.paths) > 1:
        raise InvalidInputError(f"names {len(found.paths)} binaries; a ci sweep runs one",
                                "tool.shasweep.gbench")
    return SuiteCommand([f"{{worktree}}/{found.paths[0]}", *GBENCH_ARGS, *args], "discover")


def _benchkit_command(found: FoundSuite, args: list[str]) -> SuiteCommand:
    return SuiteCommand(["{python}", "{case}", "--stream", "{stream}", "--control", "{control}", *args],
                        list(found.paths))


KINDS: dict[str, SuiteKind] = {
    "pytest-benchmark": SuiteKind("pytest-benchmark", TIME_METRIC, 0.5, _pytest_command),
    "pyperf": SuiteKind("pyperf", TIME_METRIC, 3.0, _pyperf_command),
    "gbench": SuiteKind("gbench", CPU_TIME_METRIC, 1.0, _gbench_command),
    "benchkit": SuiteKind("v1", "step_ms", 5.0, _benchkit_command,
                          params={"warmup": 2, "measure": 20}),
}


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
    later: RoundEstimate | None = None  # the rounds after the counted ones (instrumented), timed alone

    @property
    def order(self) -> str:
        return self.spec.order.value


def design_sweep(found: FoundSuite, config: CiConfig, commits: CiCommits, budget_s: float, repo: Path,
                 history: Callable[[list[str], str], float | None] | None = None) -> CiDesign:
    """The sweep of ``found`` comparing ``commits``: order, rounds within ``budget_s``, gates and the
    instrument. The rounds are sized by ``history(command, instrument)`` (a round's seconds in an
    earlier ci sweep of that command and instrument, None if there is none) or else by the suite's
    size. ``InvalidInputError`` naming
    ``--budget`` when not even ``MIN_ROUNDS`` rounds fit."""
    raw = _suite_sweep(found, config) if found.kind in KINDS else _sweep_file(found, repo)
    if config.instrument is not None:  # the project's or the command line's, over a sweep file's own
        raw["instrument"] = config.instrument
    instrument, command = str(raw.get("instrument", "none")), list(raw.get("command", []))
    # an instrumented lockstep suite counts a case only until its count gates decide, at the first
    # look after MIN_ROUNDS rounds (dispatch.adaptive.narrowed): those rounds are sized from the
    # suite (an earlier sweep's rounds were unlike), the later ones as timed rounds
    counted = (found.kind in KINDS and instrument != "none" and raw["order"] == "lockstep"
               and describe(raw["protocol"]).has(Capability.MANY_CASES))
    estimate = (_static_estimate(found, instrument) if counted
                else _estimate(found, command, instrument, history))
    minimum = minimum_budget_s(estimate.seconds)
    if budget_s < minimum:
        raise InvalidInputError(
            f"{_duration(budget_s)} is less than the {_duration(minimum)} one comparison needs here: about "
            f"{SETUP_S:g} s to start, {MIN_ROUNDS} rounds of ~{estimate.seconds:.1f} s "
            f"({estimate.source}) and {OUTPUTS_S:g} s to write the outputs; "
            f"give --budget {_duration(math.ceil(minimum))} or more", "--budget")
    later = _estimate(found, command, "none", history) if counted else estimate
    rounds = min(MIN_ROUNDS + int((budget_s - minimum) // later.seconds), MAX_ROUNDS)
    repeats = MIN_ROUNDS
    raw.update({"sides": {BASE: {"ref": commits.merge_base}, HEAD: {"ref": commits.head}}, "baseline": BASE,
                "aa": commits.same, "timeout_s": min(float(raw.get("timeout_s", budget_s)), budget_s)})
    if found.kind in KINDS or "max_repeats" not in raw:
        raw.update({"repeats": repeats, "max_repeats": max(rounds, repeats)})
    raw.setdefault("spending", SPENDING.value)
    if config.gates:
        raw["gates"] = [dict(gate) for gate in config.gates]
    elif found.kind in KINDS and instrument == Instrument.valgrind.value:
        raw["gates"].append({**raw["gates"][0], "metric": INSTRUCTIONS_METRIC})
    spec = spec_from_config(OmegaConf.create(raw))
    return CiDesign(config=raw, spec=spec, estimate=estimate, min_budget_s=minimum,
                    notes=tuple(f"also found {other}: not run (tool.shasweep.suite chooses)"
                                for other in found.also_found), later=later if counted else None)


def minimum_budget_s(round_s: float) -> float:
    """The budget one comparison needs with rounds of ``round_s`` seconds: the start, ``MIN_ROUNDS``
    rounds and the outputs."""
    return SETUP_S + MIN_ROUNDS * round_s + OUTPUTS_S


def first_round_check(record: SweepRecord, budget_s: float) -> None:
    """``InvalidInputError`` naming ``--budget`` when the deadline stopped the sweep's first round
    (``AdaptiveSummary.cut``): nothing was compared, and the round, longer than the design's estimate,
    had run for about the budget less the start and the outputs."""
    if record.adaptive is None or record.adaptive.cut != 0:
        return
    ran_s = max(budget_s - SETUP_S - OUTPUTS_S, 1.0)
    raise InvalidInputError(
        f"{_duration(budget_s)} ran out ~{_duration(ran_s)} into the first round, so nothing was compared; "
        f"give --budget over {_duration(minimum_budget_s(ran_s))}, or leave the slowest benchmark out "
        f"(tool.shasweep.args); {record.adaptive.ended}", "--budget")


def _suite_sweep(found: FoundSuite, config: CiConfig) -> dict[str, Any]:
    """The keys of a sweep of a found suite: protocol, command, cases, order, the default gate."""
    kind = KINDS[found.kind]
    command = kind.command(found, list(config.args))
    control = describe(kind.protocol).has(Capability.CONTROL_CHANNEL)
    if found.marker_only and not control:
        raise InvalidInputError(
            f"{', '.join(found.marker_only)}: pytest-codspeed's benchmark marker without the benchmark "
            "fixture is measured only in lockstep, which this shasweep does not run for pytest suites; "
            "take the benchmark fixture in those tests", "tool.shasweep.paths")
    raw: dict[str, Any] = {
        "name": SWEEP_NAME, "protocol": kind.protocol, "command": command.argv, "cases": command.cases,
        "order": "lockstep" if control and command.one_process else "interleaved",
        "results": config.results,
        "gates": [{"metric": kind.gate_metric, "max_ratio": DEFAULT_MAX_RATIO,
                   "confidence": round(1 - ALPHA / max(found.benchmarks, 1), 6)}],
        "prepare": [list(argv) for argv in config.prepare],
        "params": dict(kind.params)}
    if config.pythonpath or found.src_layout:  # a src layout's packages are imported from src/
        raw["pythonpath"] = list(config.pythonpath or ("src", "."))
    return raw


def _sweep_file(found: FoundSuite, repo: Path) -> dict[str, Any]:
    """The project's own sweep YAML, as a plain mapping (its sides are replaced by base and head)."""
    return dict(OmegaConf.to_container(read_yaml(repo / found.paths[0]), resolve=False))  # type: ignore[arg-type]


def _estimate(found: FoundSuite, command: list[str], instrument: str,
              history: Callable[[list[str], str], float | None] | None) -> RoundEstimate:
    """A round's time: from the last ci sweep of ``command`` and ``instrument``, else the suite's size."""
    earlier = history(command, instrument) if history else None
    return (RoundEstimate(earlier, "the last ci sweep of this suite") if earlier
            else _static_estimate(found, instrument))


def _static_estimate(found: FoundSuite, instrument: str) -> RoundEstimate:
    """A round's time from the suite's size when no earlier sweep says: each side's process start
    and its benchmarks at a typical time each (and under valgrind, where instrumented)."""
    per = KINDS[found.kind].per_benchmark_s if found.kind in KINDS else SWEEP_FILE_S
    benchmarks = max(found.benchmarks, 1)
    seconds = 2 * (RUN_START_S + per * benchmarks)
    source = f"about {found.benchmarks} benchmarks at ~{per:g} s each"
    if instrument == "valgrind":
        seconds += 2 * (VALGRIND_START_S + VALGRIND_PER_BENCHMARK_S * benchmarks)
        source += f" and ~{VALGRIND_PER_BENCHMARK_S:g} s under valgrind"
    return RoundEstimate(seconds, f"{source}, 2 sides")


def _duration(seconds: float) -> str:
    """``45s``, ``1m30s``, ``10m``."""
    minutes, rest = divmod(int(round(seconds)), 60)
    return f"{minutes}m{rest}s" if minutes and rest else f"{minutes}m" if minutes else f"{rest}s"
