"""Adaptive rounds and re-runs of disturbed runs: what a sweep dispatches after its planned runs.

``run_until_decided`` is the sweep path every caller uses (``shasweep run``, ``--resume``, other
verbs that run sweeps): it dispatches the planned runs and then, while any gate is INCONCLUSIVE,
one more round of the undecided (case, side) cells and their baselines, in the sweep's order (a
lockstep suite's processes play only those cells' cases, ``PlannedRun.suite_only``, and count
instructions only where a gate on them is undecided, ``PlannedRun.count_only``), until
every gate is PASS or FAIL, ``max_repeats`` rounds ran, the runs took ``budget_s`` seconds, or the
next round would end after the caller's ``deadline`` (``shasweep ci --budget``: a wall-clock limit
on the whole command, estimated from the last round's duration). A round still running at the
deadline is stopped (``dispatch_runs``) and not counted, adaptive sweep or not: the sweep ends with
the rounds before it (``cut_short``; the report reads only those).

The gates are read from the results as the report reads them (``report_model.sweep_gates``), and
the decision for round ``r`` uses only the runs of rounds before ``r``, so resuming a stopped sweep
replays the same decisions and continues where it stopped (runs already ok are not run again). Why
the repeated looks keep the gates' error rate: ``analysis.sequential``. With ``rerun_disturbed``,
every ok run ``analysis.disturbed`` flags is run once more (same run key: its files are replaced)
before the next round is decided.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any

from orchestrator.capabilities import INSTRUCTIONS_METRIC
from orchestrator.contract import PlannedRun
from orchestrator.dispatch.dispatcher import DEADLINE_REASON, SweepOutcome, dispatch_runs
from orchestrator.plan.expand import ResolvedSweep, adaptive_plan, build_plan
from orchestrator.spec.record import BUDGET_SPENT, OUT_OF_TIME, AdaptiveSummary, SweepRecord
from orchestrator.spec.schema import Order, SweepSpec

# The results are read and judged (pandas, the report model) only when a round or re-run is decided:
# the analysis modules are imported there, not before the first run is dispatched.

DECIDED, MAX_REACHED = "every gate decided", "max_repeats reached"


@dataclass
class AdaptiveRounds:
    """The next adaptive round of a sweep each time it is called (``dispatch_runs``'s ``more``)."""

    resolved: ResolvedSweep  # where the rounds' runs come from (``plan.expand.adaptive_plan``)
    record: SweepRecord  # the sweep whose gates decide
    done: set[str] = field(default_factory=set)  # run keys already ok: not run again
    next_round: int = 0
    ended: str | None = None  # why no further round runs
    deadline: float | None = None  # time.monotonic() by which the last round must have ended

    def __post_init__(self) -> None:
        self.next_round = self.next_round or self.record.spec.repeats
        self._plan = adaptive_plan(self.resolved, self.record.sweep_id)
        self._asked = time.monotonic()  # when the runs before the next call were dispatched
        self._rounds_since = self.next_round  # rounds those were

    def __call__(self) -> list[PlannedRun]:
        from orchestrator.analysis.report_model import load_runs, report_metrics

        spec = self.record.spec
        metrics = report_metrics(spec)
        round_s = self._round_s()
        while self.next_round < spec.max_rounds:
            runs = load_runs(self.resolved.results_root, self.record.sweep_id,
                             [*metrics, "wall_s", INSTRUCTIONS_METRIC])
            if spec.budget_s is not None and runs["wall_s"].sum() >= spec.budget_s:
                self.ended = BUDGET_SPENT
                return []
            cells = undecided_cells(self.record, runs[runs["repeat"] < self.next_round])
            if not cells:
                self.ended = DECIDED
                return []
            round_ = self.next_round
            self.next_round += 1
            sides = {side for _, side in cells}  # a suite run: every case of its side comes with it
            batch = [run for run in self._plan if run.repeat == round_ and run.run_key not in self.done
                     and ((run.case, run.side) in cells or (run.suite_cases and run.side in sides))]
            if batch:
                batch = narrowed(batch, cells) if spec.order is Order.lockstep else batch
                if self._out_of_time(round_s - counting_s(runs, round_ - 1, batch)):
                    self.next_round, self.ended = round_, OUT_OF_TIME
                    return []
                self._rounds_since = 1
                return batch
        self.ended = self.ended or MAX_REACHED
        return []

    def _round_s(self) -> float:
        """How long each round since the last call took, on average (the dispatch included)."""
        now = time.monotonic()
        round_s = (now - self._asked) / max(self._rounds_since, 1)
        self._asked = now
        return round_s

    def _out_of_time(self, round_s: float) -> bool:
        """Whether another round of ``round_s`` seconds would end after ``deadline``."""
        return self.deadline is not None and time.monotonic() + round_s > self.deadline

    def summary(self) -> AdaptiveSummary:
        """What the record keeps: the planned range and why the sweep stopped adding rounds."""
        spec = self.record.spec
        return AdaptiveSummary(repeats=spec.repeats, max_repeats=spec.max_rounds, rounds=self.next_round,
                               ended=self.ended)


@dataclass
class DisturbedReruns:
    """Each call: the runs of ``plan`` that finished ok but disturbed and were not re-run yet."""

    resolved: ResolvedSweep
    record: SweepRecord
    plan: list[PlannedRun]
    done: set[str] = field(default_factory=set)  # ok before this dispatch: not this one's to re-run
    rerun: set[str] = field(default_factory=set)

    def __call__(self) -> list[PlannedRun]:
        from orchestrator.analysis.disturbed import disturbed_runs
        from orchestrator.analysis.report_model import load_runs

        runs = load_runs(self.resolved.results_root, self.record.sweep_id, [])
        unit = runs["suite_run_key"].fillna(runs["run_key"])
        ok = runs[(runs["status"] == "ok") & ~unit.isin(self.done | self.rerun)]
        flagged = ok[ok["run_key"].isin(disturbed_runs(ok)["run_key"])]
        # a suite run is run again whole when one of its cases was disturbed
        keys = set(flagged["suite_run_key"].fillna(flagged["run_key"]))
        self.rerun |= keys
        return [run for run in self.plan if run.run_key in keys]


def narrowed(batch: list[PlannedRun], cells: dict[tuple[str, str], set[str]]) -> list[PlannedRun]:
    """The round's runs, each lockstep suite run told to play only its side's undecided cases (a case
    decided in an earlier round costs the later rounds nothing) and, instrumented, to count only
    those whose ``instructions`` gates are undecided (a count does not vary: once decided, a case's
    later rounds need its time alone)."""
    def cases(run: PlannedRun, metric: str | None = None) -> tuple[str, ...]:
        return tuple(sorted(case for (case, side), metrics in cells.items()
                            if side == run.side and (metric is None or metric in metrics)))

    return [replace(run, suite_only=cases(run),
                    count_only=cases(run, INSTRUCTIONS_METRIC) if run.instrument is not None else None)
            if run.suite_cases else run for run in batch]


def counting_s(runs: Any, round_: int, batch: list[PlannedRun]) -> float:
    """The seconds round ``round_`` spent counting instructions after its play (from its last
    measured block to its end) when it counted and ``batch`` counts nothing: a round without the
    instrumented processes is that much shorter. 0 otherwise, or where the round's rows do not tell."""
    from orchestrator.analysis.block_pairs import parse_blocks

    rows = runs[runs["repeat"] == round_]
    counted = INSTRUCTIONS_METRIC in rows and rows[INSTRUCTIONS_METRIC].notna().any()
    if not counted or any(run.instrument is not None and run.count_only != () for run in batch):
        return 0.0
    played = [block["ended"] for cell in rows["blocks"] for block in parse_blocks(cell)
              if isinstance(block.get("ended"), int | float)]
    ended = rows["ended_at"].max() if "ended_at" in rows else None
    if not played or ended is None or ended != ended:  # no blocks, no end (NaT)
        return 0.0
    return max(ended.timestamp() - max(played), 0.0)


def cut_short(outcome: SweepOutcome, spec: SweepSpec) -> tuple[SweepOutcome, AdaptiveSummary]:
    """``outcome`` of a sweep its deadline stopped (``DEADLINE_REASON``) as the sweep counts it, and the
    rounds it counts: the round the deadline stopped and any later one leave the outcome (their runs
    came back cancelled or never ran; their rows stay on disk, not counted: ``AdaptiveSummary.cut``),
    and the sweep ended on its budget, not stopped."""
    stopped = [run for run in outcome.runs if run.status == "cancelled"]  # never none: a unit was due
    cut = min(run.repeat for run in stopped)
    why = next((run.error for run in stopped if run.repeat == cut and run.error
                and not run.error.startswith("not run")), None)
    ended = f"{DEADLINE_REASON} during round {cut + 1}, which is not counted" + (f": {why}" if why else "")
    counted = replace(outcome, runs=[run for run in outcome.runs if run.repeat < cut], stopped_early=False,
                      stop_reason=None)
    return counted, AdaptiveSummary(repeats=spec.repeats, max_repeats=spec.max_rounds, rounds=cut,
                                    ended=ended, cut=cut)


def undecided_cells(record: SweepRecord, runs: Any) -> dict[tuple[str, str], set[str]]:
    """(case, side) cells an INCONCLUSIVE gate needs (its side and the baseline of its case), each
    with the metrics of those gates."""
    from orchestrator.analysis.report_model import sweep_gates
    from orchestrator.analysis.verdicts import Verdict

    baseline = record.spec.baseline
    cells: dict[tuple[str, str], set[str]] = {}
    for verdict in sweep_gates(record, runs):
        if verdict.verdict == Verdict.INCONCLUSIVE:
            for cell in ((verdict.case, verdict.side), (verdict.case, baseline)):
                cells.setdefault(cell, set()).add(verdict.metric)
    return cells


def run_until_decided(resolved: ResolvedSweep, record: SweepRecord, runs: list[PlannedRun], *,
                      done: set[str] | None = None, deadline: float | None = None, **dispatch: Any
                      ) -> tuple[SweepOutcome | None, AdaptiveSummary | None]:
    """Dispatch ``runs`` (``dispatch_runs``'s keyword arguments in ``dispatch``), then re-runs of
    disturbed runs (``rerun_disturbed``) and adaptive rounds while the sweep is adaptive, a gate is
    undecided and another round would end before ``deadline`` (``time.monotonic()``; None: no limit;
    at it the running round stops, any sweep's: ``cut_short``).
    Returns the outcome (None when there was nothing to run) and, for an adaptive sweep or one the
    deadline stopped (``cut_short``), the rounds it counts for the record."""
    spec, done = record.spec, set(done or ())
    rounds = AdaptiveRounds(resolved, record, done=done, deadline=deadline) if spec.adaptive else None
    reruns = None
    if spec.rerun_disturbed:
        plan = [*build_plan(resolved, record.sweep_id), *adaptive_plan(resolved, record.sweep_id)]
        reruns = DisturbedReruns(resolved, record, plan, done=done)

    def more() -> list[PlannedRun]:
        return (reruns() if reruns else []) or (rounds() if rounds else [])

    first = list(runs) or more()
    outcome = dispatch_runs(first, more=more, deadline=deadline, **dispatch) if first else None
    if outcome is not None and outcome.stop_reason == DEADLINE_REASON:
        return cut_short(outcome, spec)
    return outcome, rounds.summary() if rounds else None
