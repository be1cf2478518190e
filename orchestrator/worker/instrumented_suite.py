"""A suite's instructions per call (docs/design.md, "Instruction counts"): after a round's measured
processes, each side's suite runs once more, alone, under callgrind, driven through the suite channel
as in a lockstep round (``worker.suite_round``) with the sweep's calls per step: per case a warm-up
block and one measured block of ``INSTRUMENTED_STEPS`` steps, whose calls alone are counted (the
bench side marks them) and dumped per block. The process is killed once it has written its summary,
its counts then complete: what pytest and its plugins do after the last case (a minute under
callgrind where Hypothesis is installed) counts nothing. An adaptive round counts only the cases it
is told (``PlannedRun.count_only``: those whose gates on the counts are undecided).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from orchestrator.contract import PlannedRun
from orchestrator.worker.bench_env import chosen_hash_seed
from orchestrator.worker.bench_task import BenchSetup, render_argv
from orchestrator.worker.instrumented import (
    block_counts,
    callgrind_argv,
    clear_dumps,
    instrumented_env,
    marked_dumps,
)
from orchestrator.worker.lockstep_round import BlockPlan, Contestant, LockstepRound, RoundFailed
from orchestrator.worker.protocols.suite import SuiteReader
from orchestrator.worker.protocols.suite_stream import SuiteStreamState
from orchestrator.worker.suite_kit import with_kit
from orchestrator.worker.suite_round import SuiteRound, SuiteSeat

INSTRUMENTED_STEPS = 2  # measured steps per case: a count does not vary, a second step shows that it does not
CONTROL, STREAM = "control-callgrind.fifo", "stream-callgrind.jsonl"


def count_suite(run: PlannedRun, setup: BenchSetup, reader: SuiteReader, block_warmup: int,
                declared: list[str], calls_path: Path, stopped: Callable[[], bool]) -> dict[str, float]:
    """Case -> instructions per call of ``run``'s side; RoundFailed naming the side when the
    instrumented process fails or counts nothing."""
    assert run.instrument is not None
    clear_dumps(setup.log_dir)
    control, stream = setup.log_dir / CONTROL, setup.log_dir / STREAM
    values = {**setup.values, "control": str(control), "stream": str(stream)}
    argv = callgrind_argv(setup.log_dir, marks=True) + render_argv(run.instrument.argv, values)
    env = with_kit(instrumented_env(setup.env, chosen_hash_seed(run)))
    contestant = Contestant(side=run.side, sha=run.sha, start=lambda: setup.start(argv, "callgrind", env),
                            stream_path=stream, control_path=control, reads=SuiteStreamState)
    round_ = LockstepRound([contestant], timeout_s=run.timeout_s, stopped=stopped)
    plan = BlockPlan(block_steps=INSTRUMENTED_STEPS, blocks=1, block_warmup=max(1, block_warmup))
    counted = run if run.count_only is None else replace(run, suite_only=run.count_only)
    counting = SuiteRound(round_, [SuiteSeat(counted, setup, contestant, reader)], plan, declared, calls_path,
                          fit_long_steps=False, exit_awaited=False)
    try:
        counting.play()
    except RoundFailed as exc:
        raise RoundFailed(f"{contestant.name()} under callgrind: {exc}", run.side) from None
    finally:
        round_.kill()
    return _per_call(contestant, counting.played, block_counts(marked_dumps(setup.log_dir)))


def _per_call(contestant: Contestant, played: set[str], counts: dict[int, int]) -> dict[str, float]:
    records: SuiteStreamState = contestant.records  # type: ignore[assignment]
    found = {}
    for case in played:
        for block in records.case(case).blocks:
            if block.get("warmup"):
                continue
            if block["block"] not in counts:
                raise RoundFailed(f"{contestant.name()} under callgrind counted nothing of case {case!r} "
                                  f"(block {block['block']}: its bench side made no client request)",
                                  contestant.side)
            calls = int(block.get("calls") or 1) * int(block.get("inner_loops") or 1)
            found[case] = counts[block["block"]] / (block["steps"] * calls)
    return found
