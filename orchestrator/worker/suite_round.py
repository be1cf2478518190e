"""A lockstep round of a benchmark suite (docs/design.md, "Suites in lockstep"): every side's suite
process resident, each benchmark played in turn as a lockstep case of its own.

``SuiteRound.play`` starts the processes one after another (each parks after its header, listing
the benchmarks it collected), orders the cases the sweep selects (an adaptive round's: only those
still undecided, ``PlannedRun.suite_only``; the first declared side's order,
then each other side's own), tells each process its own cases and awaits it parked in its first.
Then case by case: the processes parked in it calibrate once per sweep (the first of them, in the
sides' declared order; ``suite-calls.json`` keeps the calls per step for every later round), play
the round's ``BlockPlan`` in ``turn_order`` with those calls, and are told ``next`` one at a time,
each awaited parked in its next case (or done: its exit awaited at once). A case only some sides
have is played by those. A benchmark that fails, or answers wrongly or not in time, fails the round
(``RoundFailed`` naming the case and the side). A case that cannot run in the process (pyperf's
``bench_command``; a fixture attribute the plugin lacks, under ``lockstep.fallback: interleaved``)
is left out of the play and run afterwards by each side that has it, as one separate process of the
tool itself (``run_separately``). A suite protocol without the channel (gbench) runs every side's
suite that way.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from orchestrator.capabilities import benchmark_selected, suite_case_name
from orchestrator.contract import PlannedRun
from orchestrator.errors import ProtocolError
from orchestrator.worker.bench_task import BenchSetup, render_argv
from orchestrator.worker.lockstep_round import BlockPlan, Contestant, LockstepRound, RoundFailed, turn_order
from orchestrator.worker.process_wait import await_process
from orchestrator.worker.protocols.suite import SuiteReader
from orchestrator.worker.protocols.suite_stream import SUITE_VERSION, SuiteStreamState
from orchestrator.worker.protocols.v1_records import valid_time

CALLS_FILE = "suite-calls.json"  # in the sweep's log directory: case -> its Calibrated
LONG_STEP_MS = 1000.0  # a step this long warms itself: its blocks need no warm-up step before them
SELECT_FILE = "select.json"  # in a run's log directory: the cases a separate process runs


@dataclass(frozen=True)
class Calibrated:
    """A case's calls per step, and how long a step of them took at calibration (None: not timed)."""

    calls: int
    step_ms: float | None = None


def case_plan(plan: BlockPlan, found: Calibrated, target_ms: float) -> BlockPlan:
    """The round's ``plan`` for a case calibrated as ``found``: as it is where its steps are about
    ``target_ms`` (``lockstep.step_ms``: several calls a step, calibrated to it); where one call
    alone outlasts a whole block's measured span (``block_steps`` x ``target_ms``), blocks of one
    measured step, and from ``LONG_STEP_MS`` on no warm-up step before them, so a benchmark of
    seconds per call costs a round seconds per block, not a minute (every side plays the same plan:
    the ratio's pairs stay alike)."""
    step_ms = found.step_ms
    if found.calls > 1 or step_ms is None or step_ms <= plan.block_steps * target_ms:
        return plan
    return replace(plan, block_steps=1, block_warmup=0 if step_ms >= LONG_STEP_MS else plan.block_warmup)


class SuiteInputError(RoundFailed):
    """The sweep's input is at fault (a ``cases`` entry no side has, an unsupported fixture API under
    ``fallback: stop``): the session stops the sweep with exit 2."""

    bad_input = True


@dataclass
class SuiteSeat:
    """One side's part in the round: its run, its set-up, its process, its tool's reader (for the
    cases it runs separately), and what the round made of its cases."""

    run: PlannedRun
    setup: BenchSetup
    contestant: Contestant
    reader: SuiteReader
    selected: list[str] = field(default_factory=list)  # its cases the sweep's ``cases`` select
    cases: list[str] = field(default_factory=list)  # the cases it was told to play, in order
    separate: list[str] = field(default_factory=list)  # its cases run as a separate process
    separate_error: str | None = None  # why that process gave no cases
    instructions: dict[str, float] | None = None  # instrument: case -> instructions per call


@dataclass
class SuiteRound:
    """The play of one suite round (see the module docstring)."""

    round_: LockstepRound
    seats: list[SuiteSeat]  # in the round's start order
    plan: BlockPlan
    declared: list[str]  # the sides in the sweep's order: who calibrates, whose order the cases follow
    calls_path: Path
    fallen: dict[str, str] = field(default_factory=dict)  # case -> why it runs as separate processes
    played: set[str] = field(default_factory=set)  # the cases played in lockstep
    plans: dict[str, BlockPlan] = field(default_factory=dict)  # case -> the plan it was played with
    whole: str | None = None  # why every side's whole suite ran as a separate process instead
    fit_long_steps: bool = True  # a case of long steps plays shorter blocks (``case_plan``; not the counts)
    exit_awaited: bool = True  # False: a process's summary ends its part (the counts; the caller kills it)

    @property
    def settings(self):
        return self.seats[0].run.lockstep

    def play(self) -> None:
        """Play every case; RoundFailed when the round cannot go on."""
        for seat in self.seats:
            self._open(seat)
        order = self._order()
        for seat in self.seats:
            names = [case for case in order if case in seat.selected and case not in self.fallen]
            seat.cases = names
            self.round_.command(seat.contestant, "its cases", cmd="cases", cases=names)
            self._advance(seat, None)
        for case in order:
            self._play_case(case)
        self._await_exits()

    def _open(self, seat: SuiteSeat) -> None:
        """Start the seat's process and read what it collected (``separate``: its cases that run apart)."""
        contestant = seat.contestant
        self.round_.start(contestant)
        self.round_.mark_parked(contestant)  # it awaits its cases
        header = contestant.records.header or {}
        if header.get("suite") != SUITE_VERSION:
            raise RoundFailed(f"{contestant.name()}: its bench does not serve a suite (no \"suite\": "
                              f"{SUITE_VERSION} in its header)", contestant.side)
        try:
            collected = contestant.records.collected()
        except ProtocolError as exc:
            raise RoundFailed(f"{contestant.name()}: {exc}", contestant.side) from None
        separate = header.get("separate") or {}
        patterns, only = seat.run.suite_cases, seat.run.suite_only
        seat.selected = [name for name in collected if benchmark_selected(name, patterns)
                         and (only is None or suite_case_name(name) in only)]
        for name in seat.selected:
            if isinstance(separate, dict) and name in separate:
                self.fallen.setdefault(name, f"{separate[name]}: runs as separate processes")

    def _order(self) -> list[str]:
        """The cases in the declared sides' order, each side's own appended; every ``cases`` pattern
        must match one of some side."""
        by_side = {seat.run.side: seat.selected for seat in self.seats}
        order: list[str] = []
        for side in self.declared:
            order += [case for case in by_side.get(side, []) if case not in order]
        names = sorted({name for seat in self.seats for name in seat.contestant.records.collected()})
        for i, pattern in enumerate(self.seats[0].run.suite_cases):
            if not any(benchmark_selected(name, [pattern]) for name in names):
                shown = ", ".join(repr(n) for n in names[:10]) + (f" and {len(names) - 10} more"
                                                                 if len(names) > 10 else "")
                raise SuiteInputError(f"cases[{i}] {pattern!r}: no benchmark of any side matches it; "
                                      f"they have {shown or 'none'}")
        return order

    def _play_case(self, case: str) -> None:
        """Play ``case`` by the processes parked in it (unless it fell back), then move each on."""
        holders = [seat for seat in self.seats if seat.contestant.records.ready == case]
        found = self._calls(case, holders) if holders and case not in self.fallen else None
        if found is not None:
            plan = case_plan(self.plan, found, self.settings.step_ms) if self.fit_long_steps else self.plan
            self.plans[case] = plan
            extra = {"case": case, "calls": found.calls}
            for slot, index in enumerate(turn_order(len(holders), plan.blocks)):
                self.round_.turn(holders[index].contestant, plan, slot // len(holders), extra)
            self.played.add(case)
        for seat in holders:
            self.round_.command(seat.contestant, f"the end of case {case!r}", cmd="next")
            self._advance(seat, case)

    def _calls(self, case: str, holders: list[SuiteSeat]) -> Calibrated | None:
        """The case's calls per step: the sweep's, or calibrated now by the first holder in the
        declared order (and kept for every later round); None when the case fell back meanwhile."""
        known = _read_calls(self.calls_path)
        if case in known:
            return known[case]
        first = min(holders, key=lambda seat: self.declared.index(seat.run.side))
        contestant = first.contestant
        self.round_.command(contestant, f"the calibration of {case!r}", cmd="calibrate", case=case,
                            target_ms=self.settings.step_ms)
        self.round_.wait_for(contestant, lambda c: c.records.case(case).calls is not None
                             or c.records.failure is not None, f"its calibration of {case!r}")
        self._check(first)
        records = contestant.records.case(case)
        if records.calls is None:  # it fell back (an unsupported attribute on the way): not played
            return None
        self.round_.mark_parked(contestant)
        found = Calibrated(records.calls, records.step_ms)
        _write_calls(self.calls_path, {**known, case: found})
        return found

    def _advance(self, seat: SuiteSeat, left: str | None) -> None:
        """Await ``seat`` parked in its next case after ``left`` (or done: its exit awaited)."""
        contestant = seat.contestant
        records: SuiteStreamState = contestant.records  # type: ignore[assignment]

        def moved(c: Contestant) -> bool:
            over = left is None or left in records.ended_cases
            return records.failure is not None or (over and (records.ready not in (None, left)
                                                             or records.summary is not None))

        what = f"its next case after {left!r}" if left else "its first case"
        while True:
            self.round_.wait_for(contestant, moved, what)
            self._check(seat)  # a case that fell back on the way: the process goes on to the next
            if records.ready not in (None, left) or records.summary is not None:
                break
        if records.ready is not None and records.ready not in seat.cases:
            raise RoundFailed(f"{contestant.name()} entered case {records.ready!r}, which it was not told to "
                              "run", contestant.side)
        if records.ready is None:
            if self.exit_awaited:
                self.round_.await_exit(contestant)
        else:
            self.round_.mark_parked(contestant)

    def _check(self, seat: SuiteSeat) -> None:
        """RoundFailed for a case the seat's process reported failed; an unsupported one falls back
        (``fallback: interleaved``) or stops the sweep."""
        records: SuiteStreamState = seat.contestant.records  # type: ignore[assignment]
        failure, contestant = records.failure, seat.contestant
        if failure is None:
            return
        records.failure = None
        case, message = failure["case"], failure.get("message") or ""
        if failure["outcome"] == "failed":
            raise RoundFailed(f"benchmark {case!r} on {contestant.name()} failed: {message}", contestant.side)
        api = failure.get("api") or message
        reason = (f"benchmark {case!r} on {contestant.name()} uses {api}, which shasweep's lockstep plugin "
                  "does not provide")
        if self.settings.fallback != "interleaved":
            raise SuiteInputError(f"{reason} (lockstep.fallback: stop; with fallback: interleaved such a "
                                  "case runs as separate processes)", contestant.side)
        self.fallen.setdefault(case, reason)
        self.played.discard(case)

    def _await_exits(self) -> None:
        for seat in self.seats:
            if self.exit_awaited and not seat.contestant.ended:
                self.round_.await_exit(seat.contestant)


def run_separately(seat: SuiteSeat, cases: list[str], argv_template: tuple[str, ...], timeout_s: float,
                   stopped) -> None:
    """Run ``cases`` of the seat's side as one process of the tool itself (``argv_template``, with
    ``{select}``: a file listing them) and read its output with the seat's reader; ``separate_error``
    says why no case came of it."""
    select = seat.setup.log_dir / SELECT_FILE
    select.write_text(json.dumps(cases))
    argv = render_argv(argv_template, {**seat.setup.values, "select": str(select)})
    proc = seat.setup.start(argv, logs="separate")
    logs = f"{seat.setup.log_dir}/stdout-separate.log, stderr-separate.log"
    seat.separate_error = await_process(proc, f"its separate process of {len(cases)} cases", timeout_s,
                                        stopped, logs) or seat.reader.complete()


def _read_calls(path: Path) -> dict[str, Calibrated]:
    """The sweep's calibrations: ``{case: {"calls": n, "step_ms": t}}`` (a bare ``n``, as sweeps
    before the step time wrote it, has no step time); an entry of any other shape is left out (its
    case calibrates again)."""
    try:
        found = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    known = {}
    for case, entry in (found.items() if isinstance(found, dict) else ()):
        calls, step_ms = ((entry.get("calls"), entry.get("step_ms")) if isinstance(entry, dict)
                          else (entry, None))
        if isinstance(calls, int) and not isinstance(calls, bool) and calls >= 1:
            known[case] = Calibrated(calls, float(step_ms) if valid_time(step_ms) else None)
    return known


def _write_calls(path: Path, calls: dict[str, Calibrated]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(json.dumps({case: asdict(found) for case, found in calls.items()}, sort_keys=True))
    temporary.replace(path)
