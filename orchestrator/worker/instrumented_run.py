"""One run's instructions, for a run that is not a lockstep round's (docs/design.md, "Instruction
counts"): after the measured process, the same bench once more under callgrind. A suite's is driven
through the suite channel (``instrumented_suite``: instructions per call of each case); a bench of
the bench helper marks its measured steps (instructions per step); any other command is counted
whole (time, json, gbench: the process and every process it started, start-up included).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from orchestrator.capabilities import INSTRUCTIONS_METRIC
from orchestrator.contract import PlannedRun, RunResult
from orchestrator.worker.bench_env import chosen_hash_seed
from orchestrator.worker.bench_task import BenchSetup, render_argv
from orchestrator.worker.instrumented import (
    InstrumentError,
    block_counts,
    callgrind_argv,
    clear_dumps,
    fingerprint,
    instrumented_env,
    read_dumps,
    whole_count,
)
from orchestrator.worker.instrumented_suite import count_suite
from orchestrator.worker.lockstep_round import Contestant, LockstepRound, RoundFailed
from orchestrator.worker.process_wait import await_process
from orchestrator.worker.protocols import BenchReader
from orchestrator.worker.protocols.suite import SuiteReader
from orchestrator.worker.protocols.v1_records import StreamState
from orchestrator.worker.safe_files import read_regular
from orchestrator.worker.suite_round import CALLS_FILE

STREAM = "stream-callgrind.jsonl"
MAX_STREAM_BYTES = 64 * 2**20


def with_instructions(run: PlannedRun, setup: BenchSetup, reader: BenchReader, result: RunResult,
                      stopped: Callable[[], bool]) -> RunResult:
    """``result`` (an ok run with ``instrument``) with its ``instructions`` and the host's fingerprint;
    failed, naming the instrumented process, when it gave no count."""
    if run.instrument is None or result.status != "ok":
        return result
    host = replace(result.host, **fingerprint(str(setup.values["python"])))
    try:
        if isinstance(reader, SuiteReader):
            calls = setup.log_dir.parent / CALLS_FILE
            counts = count_suite(run, setup, reader, 1, [run.side], calls, stopped)
            cases = [(case_run, _counted(case, counts.get(case_run.case), host))
                     for case_run, case in result.cases or []]
            return replace(result, host=host, cases=cases)
        count = _count_process(run, setup, stopped)
    except (InstrumentError, RoundFailed) as exc:
        return replace(result, status="failed", error=f"instrument: valgrind: {exc}", host=host)
    return _counted(result, count, host)


def with_count(result: RunResult, count: float | RoundFailed | None, python: str) -> RunResult:
    """A lockstep v1 run's ``result`` with its count (or failed with why there is none); ``python``:
    the bench's interpreter, whose build the host record gets."""
    if count is None:
        return result
    host = replace(result.host, **fingerprint(python))
    if isinstance(count, RoundFailed):
        return replace(result, status="failed", error=f"instrument: valgrind: {count}", summary=None,
                       host=host)
    return _counted(result, count, host)


def _counted(result: RunResult, count: float | None, host) -> RunResult:
    if result.summary is None or count is None:
        return replace(result, host=host)
    metrics = {**(result.summary.get("metrics") or {}), INSTRUCTIONS_METRIC: count}
    return replace(result, host=host, summary={**result.summary, "metrics": metrics})


def _count_process(run: PlannedRun, setup: BenchSetup, stopped: Callable[[], bool]) -> float:
    """The command once under callgrind: instructions per measured step where its bench marks them,
    else the whole process tree's."""
    assert run.instrument is not None
    marks = run.instrument.marks
    clear_dumps(setup.log_dir)
    values = {**setup.values, "stream": str(setup.log_dir / STREAM)}
    argv = callgrind_argv(setup.log_dir, marks) + render_argv(run.instrument.argv, values)
    proc = setup.start(argv, "callgrind", instrumented_env(setup.env, chosen_hash_seed(run)))
    logs = f"{setup.log_dir}/stdout-callgrind.log, stderr-callgrind.log"
    problem = await_process(proc, "the process under callgrind", run.timeout_s, stopped, logs)
    if problem is not None:
        raise InstrumentError(problem)
    dumps = read_dumps(setup.log_dir)
    if not marks:
        return float(whole_count(dumps))
    return _per_step(block_counts(dumps), _measured_steps(setup.log_dir / STREAM))


def count_v1_round(run: PlannedRun, setup: BenchSetup, block_steps: int, warmup: int,
                   stopped: Callable[[], bool]) -> float:
    """A lockstep v1 bench's instructions per step: its process alone under callgrind on the control
    channel, a warm-up block and one measured block of ``block_steps`` steps; RoundFailed naming the
    side when it fails or counts nothing."""
    assert run.instrument is not None
    clear_dumps(setup.log_dir)
    control, stream = setup.log_dir / "control-callgrind.fifo", setup.log_dir / STREAM
    values = {**setup.values, "control": str(control), "stream": str(stream)}
    argv = callgrind_argv(setup.log_dir, marks=True) + render_argv(run.instrument.argv, values)
    env = instrumented_env(setup.env, chosen_hash_seed(run))
    contestant = Contestant(side=run.side, sha=run.sha, start=lambda: setup.start(argv, "callgrind", env),
                            stream_path=stream, control_path=control)
    round_ = LockstepRound([contestant], timeout_s=run.timeout_s, stopped=stopped)
    try:
        round_.open(max(1, warmup))
        round_.block(contestant, block_steps, warmup=False)
        round_.finish()
        return _per_step(block_counts(read_dumps(setup.log_dir)), block_steps)
    except (RoundFailed, InstrumentError) as exc:
        raise RoundFailed(f"{contestant.name()} under callgrind: {exc}", run.side) from None
    finally:
        round_.kill()


def _per_step(counts: dict[int, int], steps: int) -> float:
    if not counts or steps < 1:
        raise InstrumentError("the bench marked no measured step (a bench of orchestrator.benchkit marks "
                              "them; any other v1 bench is counted only by a protocol time or json)")
    return sum(counts.values()) / steps


def _measured_steps(stream: Path) -> int:
    """The measured steps the instrumented process's stream reports."""
    state = StreamState()
    for line in (read_regular(stream, MAX_STREAM_BYTES) or b"").decode("utf-8", "replace").splitlines():
        state.feed(line)
    return state.steps.measured
