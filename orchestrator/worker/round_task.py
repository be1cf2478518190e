"""The task a bench worker runs for one lockstep round: one case's runs of one round, every side's
process resident, the host given to one at a time (docs/design.md, "Run protocol", control channel).

The round is one dispatch unit: it holds the host lock from the first start to the last exit (after
waiting for a quiet host when the sweep asks, ``worker.quiet``), checks out each SHA, prepares and
audits each run as ``worker.bench_task`` does, and plays the round with ``worker.lockstep_round``: the
processes started one after another in the round's order (it rotates by round), blocks in
``turn_order``, each after its own warm-up steps. Every run of the round gets its row, written
when the round is over; if the round fails, every run of it fails (the side at fault named, the
others "killed with their round"), so ``--resume`` runs the round again whole.

A side whose bench does not declare the control channel (an older SHA) stops the round: with
``lockstep.fallback: stop`` every run fails naming it (``bad_input``: the sweep stops, and the
session ends it with exit 2); with ``fallback: interleaved`` the round's runs each run alone instead, one
after the other (a bench without the channel runs its own warm-up and measured steps; one with it
gets a warm-up block and a measured block of ``params.warmup`` / ``params.measure`` steps), and
their rows say ``ran_in: interleaved`` and why. A bench that rejects the control option itself
(exit 2 before its header, an envruntime that predates it) counts as one without the channel when
the plan could render its command without the option (``lockstep.plain_argv``).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from orchestrator.capabilities import Capability, describe
from orchestrator.contract import NO_STEPS, Outcome, PlannedRun, RunResult, host_id
from orchestrator.errors import InvalidInputError, RunCancelledError, SchedulerLostError
from orchestrator.worker import bench_task
from orchestrator.worker.cleanup import clear_note, kill_leftover_run, note_running
from orchestrator.worker.disturbance import MeasureWindow
from orchestrator.worker.instrumented_run import count_v1_round, with_count
from orchestrator.worker.instrumented_suite import count_suite
from orchestrator.worker.lockstep_round import (
    BLOCK_KEYS,
    BlockPlan,
    Contestant,
    LockstepRound,
    NoControlChannel,
    RoundFailed,
)
from orchestrator.worker.log_trim import logs_in_use, trim_sweep_logs
from orchestrator.worker.machine_lock import host_lock_path, machine_lock
from orchestrator.worker.prepare import PrepareError
from orchestrator.worker.protocols import BenchReader, make_reader
from orchestrator.worker.protocols.suite_stream import SuiteStreamState
from orchestrator.worker.protocols.v1_records import StreamState
from orchestrator.worker.run_audit import audit_result
from orchestrator.worker.run_guard import failed_result, store_result
from orchestrator.worker.suite_kit import with_kit
from orchestrator.worker.suite_results import suite_result
from orchestrator.worker.suite_round import CALLS_FILE, SuiteRound, SuiteSeat, run_separately
from orchestrator.worker.task_channel import Publisher, dask_cancel_check, dask_publisher, event, published
from orchestrator.worker.worktrees import WorktreeError, WorktreePool

CONTROL_FIFO = "control.fifo"
EXIT_INVALID_ARGS = 2  # the run protocol's exit code for invalid arguments


@dataclass
class _Player:
    """One run of the round: its setup, its process's part in the round and its protocol's reader."""

    run: PlannedRun
    setup: bench_task.BenchSetup
    contestant: Contestant
    reader: BenchReader


def execute_round(runs: list[PlannedRun], *, lock_path: str | None = None) -> list[Outcome]:
    """Run the lockstep round ``runs`` (one case, every side once, the same repeat) under the host
    lock; one outcome per run, in the given order. Failures are outcomes, as in ``execute_run``."""
    publish = dask_publisher()
    log_dirs = {run.run_key: bench_task.run_log_dir(run) for run in runs}
    results = measure_round(runs, log_dirs, lock_path=lock_path, publish=publish,
                            cancelled=dask_cancel_check(runs[0]))
    outcomes = []
    for run in runs:
        if results[run.run_key].cases is not None:  # a suite: every case a run of its own
            outcomes.append(_store_suite_round(run, results[run.run_key], publish))
            continue
        result, files = store_result(run, audit_result(run, results[run.run_key]))
        outcomes.append(run.outcome(
            host_id=result.host.id, status=result.status, error=result.error,
            throughput=result.throughput, wall_s=result.wall_s, exit_code=result.exit_code,
            started_at=result.started_at.isoformat(), ended_at=result.ended_at.isoformat(),
            log_dir=str(log_dirs[run.run_key]), runs_file=str(files.runs), steps_file=str(files.steps),
            ran_in=result.ran_in, fallback=result.fallback, no_control=result.bad_input is not None,
            reported=tuple(result.reported) if result.status == "ok" else (), lock_wait_s=result.lock_wait_s))
        publish(event(run, "finished", status=result.status, error=result.error,
                                  throughput=result.throughput, wall_s=result.wall_s, ran_in=result.ran_in,
                                  outcome=published(outcomes[-1])))
    trim_sweep_logs(log_dirs[runs[0].run_key].parent)  # the round stored: its sweep's logs to their cap
    return outcomes


def measure_round(runs: list[PlannedRun], log_dirs: dict[str, Path], *, lock_path: str | None = None,
                  publish: Publisher = lambda msg: None, cancelled: Callable[[], bool] = lambda: False
                  ) -> dict[str, RunResult]:
    """Lock the host, check out each SHA and play the round: each run's result by run key, neither
    audited nor stored yet (``execute_round`` does both; ``shasweep try`` plays one side's run alone,
    audits it and only shows it). Whatever fails on the worker's side fails every run, never raises."""
    for run in runs:
        publish(event(run, "waiting"))
    try:
        lock = Path(lock_path) if lock_path else host_lock_path(host_id())
        return _locked_round(runs, log_dirs, lock, publish, cancelled)
    except RunCancelledError as exc:
        return {run.run_key: replace(failed_result(str(exc), log_dirs[run.run_key]), status="cancelled")
                for run in runs}
    except (WorktreeError, InvalidInputError, PrepareError, SchedulerLostError) as exc:
        return {run.run_key: failed_result(str(exc), log_dirs[run.run_key]) for run in runs}
    except Exception as exc:  # noqa: BLE001 - whatever broke, every run of the round gets its row
        error = f"the bench worker failed: {type(exc).__name__}: {exc}"
        return {run.run_key: failed_result(error, log_dirs[run.run_key]) for run in runs}


def _store_suite_round(run: PlannedRun, result: RunResult, publish: Publisher) -> Outcome:
    outcome = bench_task.store_suite(run, result, ran_in=result.ran_in, fallback=result.fallback,
                                     no_control=False, lock_wait_s=result.lock_wait_s)
    publish(event(run, "finished", status=outcome.status, error=outcome.error, throughput=None,
                  wall_s=result.wall_s, ran_in=result.ran_in, outcome=published(outcome)))
    return outcome


def _locked_round(runs: list[PlannedRun], log_dirs: dict[str, Path], lock: Path,
                  publish: Publisher, cancelled) -> dict[str, RunResult]:
    asked = time.monotonic()
    keys = " ".join(run.run_key for run in runs)
    with contextlib.ExitStack() as held:
        for directory in log_dirs.values():
            held.enter_context(logs_in_use(directory))  # gc leaves the logs alone
        marker = held.enter_context(machine_lock(lock, runs[0].sweep_id, keys, cancelled=cancelled,
                                                 on_wait=bench_task.lock_waiter(runs, publish)))
        waited_s = time.monotonic() - asked
        kill_leftover_run(marker)
        quiet = bench_task.wait_quiet(runs, publish, cancelled)
        with contextlib.ExitStack() as stack:
            pool = WorktreePool()
            trees: dict[str, Path] = {}
            for run in runs:  # one checkout per SHA (an A/A round runs both sides from one)
                if run.sha not in trees:
                    trees[run.sha] = stack.enter_context(pool.checkout(run.repo, run.sha,
                                                                       checked_for=run.sweep_id,
                                                                       submodules=run.submodules))
            results = _play(runs, trees, log_dirs, marker, publish, cancelled)
    return {key: bench_task.with_waits(result, waited_s, quiet) for key, result in results.items()}


def _play(runs: list[PlannedRun], trees: dict[str, Path], log_dirs: dict[str, Path], marker: Path,
          publish: Publisher, cancelled) -> dict[str, RunResult]:
    first = runs[0].repeat % len(runs)  # the round's start order rotates by round
    suite = describe(runs[0].protocol).has(Capability.MANY_CASES)
    players = [_player(run, trees[run.sha], log_dirs[run.run_key], suite)
               for run in runs[first:] + runs[:first]]
    note_running(marker, *(player.run.run_key for player in players))
    by_contestant = {id(player.contestant): player for player in players}

    def on_block(contestant: Contestant, record: dict) -> None:
        player = by_contestant[id(contestant)]
        cycle = contestant.cycles.get(record["block"])
        publish(event(player.run, "block", **{key: record.get(key) for key in BLOCK_KEYS},
                                  cycle=cycle))

    settings = runs[0].lockstep
    round_ = LockstepRound([p.contestant for p in players], timeout_s=runs[0].timeout_s, stopped=cancelled,
                           on_block=on_block)
    plan = BlockPlan(block_steps=settings.block_steps, blocks=settings.blocks,
                     block_warmup=settings.block_warmup, warmup=int(runs[0].params.get("warmup", 0) or 0))
    window = MeasureWindow()
    started_at, began = datetime.now(UTC), time.monotonic()
    for player in players:
        publish(event(player.run, "started", total=plan.blocks * plan.block_steps))
    failure: RoundFailed | None = None
    fallback: str | None = None
    seats = [SuiteSeat(p.run, p.setup, p.contestant, p.reader) for p in players] if suite else []
    played: SuiteRound | None = None
    try:
        if suite:
            played = _suite_blocks(round_, seats, plan, runs, window)
        else:
            fallback = _rounds_blocks(round_, players, plan, window)
    except RoundFailed as exc:
        failure = exc
    finally:
        round_.kill()  # each process's launch helper kills what it left, daemons included
        clear_note(marker)
    window.finish()
    counts = _count_v1(players, plan, cancelled) if not suite and failure is None and fallback is None \
        and runs[0].instrument is not None else {}
    ended_at, elapsed_s = datetime.now(UTC), time.monotonic() - began
    if suite:
        return {seat.run.run_key: suite_result(seat, failure, played, window, started_at, ended_at, elapsed_s)
                for seat in seats}
    results = {player.run.run_key: _result(player, failure, fallback, window, started_at, ended_at, elapsed_s)
               for player in players}
    return {player.run.run_key: with_count(results[player.run.run_key], counts.get(player.run.run_key),
                                           str(player.setup.values["python"])) for player in players}


def _count_v1(players: list[_Player], plan: BlockPlan, cancelled) -> dict[str, float | RoundFailed]:
    """instrument: each side's instructions per step, its bench alone under callgrind (run key ->
    the count, or why there is none)."""
    found: dict[str, float | RoundFailed] = {}
    for player in players:
        try:
            found[player.run.run_key] = count_v1_round(player.run, player.setup, plan.block_steps,
                                                       plan.warmup, cancelled)
        except RoundFailed as exc:
            found[player.run.run_key] = exc
    return found


def _player(run: PlannedRun, tree: Path, log_dir: Path, suite: bool) -> _Player:
    reader = make_reader(run, log_dir)  # where the stream goes (old files removed)
    control = log_dir / CONTROL_FIFO
    setup = bench_task.set_up(run, tree, log_dir, reader, {"control": str(control)},
                              cpus=bench_task.round_cpus(run, suite))
    if suite:  # the sweep's interpreter may lack shasweep: its plugin and shim come from the worker
        setup.env = with_kit(setup.env)
    contestant = Contestant(side=run.side, sha=run.sha, start=setup.start, stream_path=reader.stream_path,
                            control_path=control, reads=SuiteStreamState if suite else StreamState)
    return _Player(run, setup, contestant, reader)


def _suite_blocks(round_: LockstepRound, seats: list[SuiteSeat], plan: BlockPlan, runs: list[PlannedRun],
                  window: MeasureWindow) -> SuiteRound:
    """Play a suite's round (``worker.suite_round``), then run each side's fallen-back cases apart."""
    settings = runs[0].lockstep
    calls_path = bench_task.run_log_dir(runs[0]).parent / CALLS_FILE
    played = SuiteRound(round_, seats, plan, declared=[run.side for run in runs], calls_path=calls_path)
    window.begin()
    if settings.select_argv is None:  # no control channel for this tool: every side's suite runs apart
        played.whole = f"protocol {runs[0].protocol} has no control channel: each side's suite runs as a " \
                       "separate process"
        for seat in seats:
            run_separately(seat, [], seat.run.argv_template, seat.run.timeout_s, round_.stopped)
    else:
        played.play()
        for seat in seats:
            seat.separate = [case for case in seat.selected if case in played.fallen]
            if seat.separate:
                run_separately(seat, seat.separate, settings.select_argv, seat.run.timeout_s, round_.stopped)
    window.end()
    if runs[0].instrument is not None and played.whole is None:  # after the measured processes
        for seat in seats:
            if seat.run.count_only != ():  # (): every count this side's cases need is decided
                seat.instructions = count_suite(seat.run, seat.setup, seat.reader, plan.block_warmup,
                                                played.declared, calls_path, round_.stopped)
    return played


def _rounds_blocks(round_: LockstepRound, players: list[_Player], plan: BlockPlan,
                   window: MeasureWindow) -> str | None:
    """Play the round; returns None (it ran in lockstep) or why its runs ran alone instead."""
    fallback: str | None = None
    parked: list[_Player] = []
    for player in players:
        reason = _start(round_, player)
        fallback = fallback or reason
        if reason is not None:  # no control channel: it runs alone, as a plain run
            round_.await_exit(player.contestant)
        elif fallback is None:
            round_.block(player.contestant, plan.warmup, warmup=True)
            parked.append(player)
        else:  # the round already fell back: this one runs alone at once
            _run_alone(round_, player, plan)
    if fallback is not None:
        for player in parked:
            round_.block(player.contestant, _measure(player.run), warmup=False)
            round_.end(player.contestant)
        return fallback
    window.begin()  # every process parked: the measured window starts
    round_.play(plan)
    window.end()
    round_.finish()
    return None


def _start(round_: LockstepRound, player: _Player) -> str | None:
    """Start the player's process; None when it declared the control channel, else why not (its
    process then runs as a plain run). Raises NoControlChannel under ``fallback: stop``."""
    contestant, settings = player.contestant, player.run.lockstep
    allow = settings.fallback == "interleaved"
    try:
        round_.start(contestant)
        return None
    except NoControlChannel as exc:
        if not allow:
            raise
        return str(exc)
    except RoundFailed as exc:
        rejected = contestant.records.header is None and contestant.proc is not None \
            and contestant.proc.returncode == EXIT_INVALID_ARGS
        if not rejected or not settings.plain_argv:
            raise
        reason = (f"{contestant.name()}: its bench exited {EXIT_INVALID_ARGS} on the control option before "
                  f"its header (it predates the control channel): {exc}")
        if not allow:
            raise NoControlChannel(reason, contestant.side) from None
    plain = bench_task.render_argv(settings.plain_argv, player.setup.values)
    contestant.ended = False
    try:
        round_.start(contestant, lambda: player.setup.start(plain))
    except NoControlChannel:
        pass  # as expected: it runs as a plain run
    return reason


def _run_alone(round_: LockstepRound, player: _Player, plan: BlockPlan) -> None:
    round_.blocks(player.contestant, [(plan.warmup, True, None), (_measure(player.run), False, None)])
    round_.end(player.contestant)


def _measure(run: PlannedRun) -> int:
    return int(run.params.get("measure", 1) or 1)


def _result(player: _Player, failure: RoundFailed | None, fallback: str | None, window: MeasureWindow,
            started_at: datetime, ended_at: datetime, elapsed_s: float) -> RunResult:
    contestant, setup = player.contestant, player.setup
    records, proc = contestant.records, contestant.proc
    if failure is None:
        status, error = "ok", None
    elif failure.side in (contestant.side, None):
        status, error = failure.status, f"lockstep round: {failure}"
    else:
        status, error = "failed", f"killed with its lockstep round: {failure}"
    ok = status == "ok"
    return RunResult(
        status=status, error=error, started_at=started_at, ended_at=ended_at, elapsed_s=elapsed_s,
        exit_code=proc.returncode if proc else None, log_dir=str(setup.log_dir),
        host=replace(setup.host, **window.columns(records.steps)), header=records.header,
        summary=records.summary if ok else None, steps=records.steps if ok else NO_STEPS,
        usage=proc.usage if proc else None, pythonpath=setup.pythonpath, worktree=str(setup.tree.resolve()),
        audit_modules=setup.audit_modules(), ran_in="interleaved" if fallback else "lockstep",
        fallback=fallback, blocks=contestant.block_summaries() if ok else None,
        bad_input=str(failure) if failure is not None and failure.bad_input else None)
