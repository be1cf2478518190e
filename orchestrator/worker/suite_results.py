"""The rows of a suite's lockstep round (docs/design.md, "Suites in lockstep"): each side's suite run
with its cases, each case a run of its own.

A case played in lockstep takes its measured steps (``time_ms`` per call, and ``cpu_ms`` and
``thread_cpu_ms`` where the plugin timed the calls itself) and blocks from the side's stream
(``SuiteStreamState``); a case that ran as a separate process takes the tool's own numbers from that
process's output (its reader), ``ran_in: interleaved`` and why. A failed round leaves each side one
failed row of its suite run (cases None), so ``--resume`` runs the round again whole.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from statistics import fmean

from orchestrator.capabilities import INSTRUCTIONS_METRIC, TIME_METRIC
from orchestrator.contract import NO_STEPS, PlannedRun, RunResult, StepRecord
from orchestrator.store.step_log import StepLog
from orchestrator.worker.disturbance import MeasureWindow
from orchestrator.worker.instrumented import fingerprint
from orchestrator.worker.lockstep_round import BLOCK_KEYS, RoundFailed
from orchestrator.worker.protocols.suite_cases import case_results, case_run
from orchestrator.worker.protocols.suite_stream import CaseRecords, SuiteStreamState
from orchestrator.worker.suite_round import SuiteRound, SuiteSeat

SOURCE_UNIT = "s"  # the plugins time with time.perf_counter, in seconds


def suite_result(seat: SuiteSeat, failure: RoundFailed | None, suite: SuiteRound | None,
                 window: MeasureWindow, started_at: datetime, ended_at: datetime,
                 elapsed_s: float) -> RunResult:
    """The seat's suite run: failed when the round failed (the side at fault named, the others killed
    with it), else ok with its ``cases``."""
    contestant, setup = seat.contestant, seat.setup
    proc = contestant.proc
    host = setup.host
    if seat.run.instrument is not None:  # what the counts depend on besides the CPU model
        host = replace(host, **fingerprint(str(setup.values["python"])))
    base = RunResult(
        status="ok", error=None, started_at=started_at, ended_at=ended_at, elapsed_s=elapsed_s,
        exit_code=proc.returncode if proc else None, log_dir=str(setup.log_dir), host=host,
        usage=proc.usage if proc else None, pythonpath=setup.pythonpath, worktree=str(setup.tree.resolve()),
        audit_modules=setup.audit_modules(), ran_in="lockstep")
    if failure is not None or suite is None:
        assert failure is not None
        bad_input = str(failure) if failure.bad_input else None
        if failure.side in (contestant.side, None):
            status, error = failure.status, f"lockstep round: {failure}"
        else:
            status, error = "failed", f"killed with its lockstep round: {failure}"
        return replace(base, status=status, error=error, bad_input=bad_input)
    if suite.whole is not None:
        whole = replace(base, ran_in="interleaved", fallback=suite.whole)
        if seat.separate_error is not None:
            return replace(whole, status="failed", error=seat.separate_error)
        return _whole_cases(seat, whole)
    records: SuiteStreamState = contestant.records  # type: ignore[assignment]
    cases = [(_played_run(seat, suite, name), _played(seat, records, name, base, window))
             for name in seat.cases if name in suite.played and _measured(records.case(name))]
    cases += [(case_run(seat.run, name), _separate(seat, name, suite.fallen[name], base))
              for name in seat.selected if name in suite.fallen]
    return replace(base, cases=cases)


def _played_run(seat: SuiteSeat, suite: SuiteRound, name: str) -> PlannedRun:
    """Case ``name``'s run, with the blocks its round played (``suite_round.case_plan``: blocks of one
    step for a benchmark whose one call outlasts a block), which its audit and its row hold."""
    run = case_run(seat.run, name)
    plan = suite.plans.get(name)
    if plan is None or run.lockstep is None:
        return run
    return replace(run, lockstep=replace(run.lockstep, block_steps=plan.block_steps,
                                         block_warmup=plan.block_warmup))


def _measured(records: CaseRecords) -> bool:
    return any(not block.get("warmup") for block in records.blocks)


def _played(seat: SuiteSeat, records: SuiteStreamState, name: str, base: RunResult,
            window: MeasureWindow) -> RunResult:
    """Case ``name`` as played in lockstep."""
    case = records.case(name)
    steps = StepLog(StepRecord(step=i, warmup=step.warmup, phases=dict(step.phases))
                    for i, step in enumerate(case.steps))
    measured = [s.phases for s in case.steps if not s.warmup]
    means = {phase: fmean(p[phase] for p in measured) for phase in measured[0]
             if all(phase in p for p in measured)}  # each phase every measured step has
    time_ms = means[TIME_METRIC]
    audit = {**((records.header or {}).get("audit") or {}), "source_unit": SOURCE_UNIT}
    extra = (case.end or {}).get("extra_info")
    if isinstance(extra, dict):
        audit["extra_info"] = extra
    counted = (seat.instructions or {}).get(name)
    summary = {"throughput": 1000.0 / time_ms if time_ms > 0 else None,
               "phase_means_ms": means,
               "metrics": {INSTRUCTIONS_METRIC: counted} if counted is not None else {}}
    return replace(base, header={"audit": audit}, summary=summary, steps=steps,
                   host=replace(base.host, **window.columns(steps)), suite_run_key=seat.run.run_key,
                   blocks=_blocks(seat, case))


def _blocks(seat: SuiteSeat, case: CaseRecords) -> list[dict]:
    """The case's blocks as the runs table keeps them (``analysis.block_pairs``): each with its cycle,
    its calls, its throughput (calls per second of its steps) and its mean time per call."""
    cycles = seat.contestant.cycles
    found = []
    for record in case.blocks:
        number, steps, wall = record["block"], record["steps"], record["wall_s"]
        calls = record.get("calls") if isinstance(record.get("calls"), int) else None
        sums = case.block_phase_sums.get(number, {})
        found.append({key: record.get(key) for key in BLOCK_KEYS} | {
            "cycle": cycles.get(number), "calls": calls,
            "throughput": calls * steps / wall if calls and steps and wall > 0 else None,
            "phases": {phase: total / steps for phase, total in sums.items()} if steps else {}})
    return found


def _separate(seat: SuiteSeat, name: str, reason: str, base: RunResult) -> RunResult:
    """Case ``name`` as its tool measured it in the side's separate process."""
    fell_back = replace(base, ran_in="interleaved", fallback=reason, suite_run_key=seat.run.run_key)
    error = seat.separate_error or seat.reader.select(name)
    if error is not None:
        return replace(fell_back, status="failed", error=error, steps=NO_STEPS)
    reader = seat.reader
    return replace(fell_back, header=reader.header, summary=reader.summary, steps=reader.steps)



def _whole_cases(seat: SuiteSeat, whole: RunResult) -> RunResult:
    """A whole suite run apart (a tool without the channel): its cases as a plain suite run has them."""
    result = case_results(seat.run, seat.reader, whole)
    cases = [(run, replace(case, ran_in=whole.ran_in, fallback=whole.fallback))
             for run, case in result.cases or []]
    return replace(result, cases=cases if result.cases is not None else None)
