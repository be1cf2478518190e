"""A lockstep round with real bench processes (``worker.lockstep_round``): exactly one process runs at any
instant, start-up included, and every way a round can fail names the side, its SHA and what the
round awaited, with every process of the round killed. A hostile side (``fakebench/lockstep_hostile.py``:
a real FIFO filled, a real CPU hog, a real flood of its stream) cannot hold the round past its
timeout or a cancel, nor work unseen while parked."""

from __future__ import annotations

import math
import os
import sys
import threading
import time
from pathlib import Path

import pytest
from fakebench.fakerepo import git

from orchestrator.analysis.block_pairs import pair_log_ratios
from orchestrator.worker.lockstep_round import (
    BlockPlan,
    Contestant,
    LockstepRound,
    NoControlChannel,
    RoundFailed,
    run_blocks,
    turn_order,
)
from orchestrator.worker.proc import launch
from orchestrator.worker.stream import READ_CHUNK_BYTES

BENCH = Path(__file__).with_name("fakebench") / "lockstep_bench.py"
HOSTILE = Path(__file__).with_name("fakebench") / "lockstep_hostile.py"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def trees(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    """Two commits of the lockstep bench, each checked out in its own worktree: side -> (tree, SHA)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    found = {}
    for side, step_ms in (("base", 2.0), ("cand", 3.0)):
        source = BENCH.read_text().replace('{"step_ms": 2.0}', f'{{"step_ms": {step_ms}}}')
        (repo / "lockstep_bench.py").write_text(source)
        git(repo, "add", "lockstep_bench.py")
        git(repo, "commit", "-q", "-m", side)
        sha = git(repo, "rev-parse", "HEAD")
        tree = tmp_path / f"tree-{side}"
        git(repo, "worktree", "add", "-q", "--detach", str(tree), sha)
        found[side] = (tree, sha)
    return found


def contestants(trees: dict, logs: Path, extra: dict[str, list[str]] | None = None,
                hostile: dict[str, list[str]] | None = None) -> list[Contestant]:
    """A contestant per side running the lockstep bench (``extra``: more of its options), or for the
    sides in ``hostile`` the hostile bench with those options."""
    found = []
    for side, (tree, sha) in trees.items():
        stream, control = logs / f"{side}.jsonl", logs / f"{side}.fifo"
        script, options = ((str(HOSTILE), hostile[side]) if side in (hostile or {})
                           else ("lockstep_bench.py", (extra or {}).get(side, [])))
        argv = [sys.executable, script, "--stream", str(stream), "--control", str(control), *options]

        def start(argv=argv, tree=tree, stream=stream):
            return launch(argv, cwd=tree, env={**os.environ, "PYTHONPATH": str(ROOT)},
                          stdout_path=stream.with_suffix(".out"), stderr_path=stream.with_suffix(".err"),
                          cpus=os.sched_getaffinity(0))
        found.append(Contestant(side=side, sha=sha, start=start, stream_path=stream, control_path=control))
    return found


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_two_processes_take_turns_and_never_run_at_once(trees, tmp_path):
    players = contestants(trees, tmp_path)
    round_ = LockstepRound(players, timeout_s=120)
    plan = BlockPlan(block_steps=3, blocks=4, block_warmup=1, warmup=2)
    try:
        run_blocks(round_, plan, first=1)
    finally:
        round_.kill()
    base, cand = players
    spans = sorted((b["started"], b["ended"], c.side, b["warmup"]) for c in players for b in c.records.blocks)
    for (_, ended, *_), (started, *_) in zip(spans, spans[1:], strict=False):
        assert started >= ended, "two blocks overlapped in time"
    measured = [side for _, _, side, warmup in spans if not warmup]
    assert measured == [players[i].side for i in turn_order(2, plan.blocks, first=1)]
    # the second process was born after the first had run its warm-up block and parked
    assert cand.records.header["params"]["born"] > base.records.blocks[0]["ended"]
    for player in players:
        assert player.proc.returncode == 0 and player.records.summary is not None
        assert [(b["steps"], b["warmup"]) for b in player.records.blocks] == \
            [(2, True)] + [(1, True), (3, False)] * plan.blocks
        wall = sum(b["wall_s"] for b in player.records.blocks if not b["warmup"])
        assert player.records.summary["measure_wall_s"] == pytest.approx(wall)
    assert not list(tmp_path.glob("*.fifo")), "the control FIFOs are removed with the round"
    kept = {player.side: player.block_summaries() for player in players}
    for blocks in kept.values():
        measured = [b for b in blocks if not b["warmup"]]
        assert [b["cycle"] for b in measured] == list(range(plan.blocks))
        assert all(b["throughput"] > 0 and b["phases"]["step_ms"] > 0 for b in measured)
    pairs = pair_log_ratios(kept["base"], kept["cand"], "throughput")
    assert len(pairs) == plan.blocks and all(math.isfinite(p) for p in pairs)
    for player in players:  # a well-behaved parked process is idle: measured, and within the allowance
        assert player.parked.intervals >= plan.blocks and player.parked.excess() is None, player.parked


def test_a_bench_without_the_control_channel_is_named_with_its_sha(trees, tmp_path):
    players = contestants(trees, tmp_path, {"cand": ["--no-control"]})
    round_ = LockstepRound(players, timeout_s=120)
    with pytest.raises(NoControlChannel) as raised:
        try:
            round_.open(warmup=1)
        finally:
            round_.kill()
    assert raised.value.side == "cand"
    assert f"side 'cand' (SHA {trees['cand'][1][:12]})" in str(raised.value)
    assert '"control": 1' in str(raised.value)
    assert all(gone(p.proc.pid) for p in players)


def failed_round(players: list[Contestant], plan: BlockPlan, timeout_s: float) -> RoundFailed:
    """Play a round that must fail; its error, once every process of it is gone."""
    round_ = LockstepRound(players, timeout_s=timeout_s)
    with pytest.raises(RoundFailed) as raised:
        try:
            run_blocks(round_, plan)
        finally:
            round_.kill()
    assert all(gone(p.proc.pid) for p in players), "the other side's process dies with the round"
    return raised.value


def test_a_bench_that_never_answers_fails_the_round_naming_what_was_awaited(trees, tmp_path):
    never = tmp_path / "never-created"
    players = contestants(trees, tmp_path, {"cand": ["--wait-file", str(never)]})
    failure = failed_round(players, BlockPlan(block_steps=2, blocks=2, block_warmup=0, warmup=0), timeout_s=3)
    assert failure.side == "cand" and failure.status == "timeout" and trees["cand"][1][:12] in str(failure)
    assert "did not answer within timeout_s=3" in str(failure)
    assert "the end of block 1 (2 steps)" in str(failure)


def test_a_bench_that_crashes_mid_round_is_named_and_the_other_process_killed(trees, tmp_path):
    players = contestants(trees, tmp_path, {"base": ["--crash-at-step", "5"]})
    plan = BlockPlan(block_steps=2, blocks=4, block_warmup=0, warmup=1)
    failure = failed_round(players, plan, timeout_s=120)
    assert failure.side == "base" and "exited with code 3" in str(failure)
    assert "while the round awaited the end of block" in str(failure)


def test_a_parked_process_that_dies_is_named_while_the_other_runs(trees, tmp_path):
    never = tmp_path / "never-created"
    players = contestants(trees, tmp_path, {"cand": ["--wait-file", str(never)]})
    round_ = LockstepRound(players, timeout_s=120)
    try:
        round_.open(warmup=0)
        base = players[0].proc
        threading.Timer(0.2, lambda: os.killpg(base.pid, 9)).start()
        with pytest.raises(RoundFailed) as raised:
            round_.block(players[1], 1, warmup=False)
    finally:
        round_.kill()
    message = str(raised.value)
    assert raised.value.side == "base" and "exited with code -9" in message
    assert "parked while side 'cand'" in message


@pytest.mark.parametrize("sides", [2, 3, 4])
def test_turn_order_gives_every_side_the_same_mean_position(sides):
    for first in range(sides):
        order = turn_order(sides, 2 * sides, first)  # two Williams squares (one, and its mirror, if odd)
        positions = [[i for i, s in enumerate(order) if s == side] for side in range(sides)]
        assert all(len(p) == 2 * sides for p in positions)
        assert len({sum(p) for p in positions}) == 1
        follows = {(a, b) for a, b in zip(order, order[1:], strict=False) if a != b}
        assert len(follows) == sides * (sides - 1), "every side follows every other"


def test_turn_order_of_two_sides_is_abba():
    assert turn_order(2, 4) == [0, 1, 1, 0, 0, 1, 1, 0]
    assert turn_order(2, 2, first=1) == [1, 0, 0, 1]


# ---------------------------------------------------------------- what a parked side can do (issue 41)
TIMEOUT_PLAN = BlockPlan(block_steps=2, blocks=2, block_warmup=0, warmup=1)


@pytest.mark.timeout(120)  # before the fix the worker blocked in os.write for good
def test_a_bench_that_fills_its_own_control_fifo_and_stops_reading_fails_at_the_timeout(trees, tmp_path):
    players = contestants(trees, tmp_path, hostile={"cand": ["--mode", "fill-control"]})
    failure = failed_round(players, TIMEOUT_PLAN, timeout_s=3)
    assert failure.side == "cand" and failure.status == "timeout", failure
    assert "did not answer within timeout_s=3" in str(failure)
    assert "room in its control channel for block 0" in str(failure)


@pytest.mark.timeout(120)
def test_a_cancel_ends_a_round_whose_bench_filled_its_fifo(trees, tmp_path):
    players = contestants(trees, tmp_path, hostile={"cand": ["--mode", "fill-control"]})
    cancel_at = time.monotonic() + 3
    round_ = LockstepRound(players, timeout_s=600, stopped=lambda: time.monotonic() > cancel_at)
    with pytest.raises(RoundFailed) as raised:
        try:
            run_blocks(round_, TIMEOUT_PLAN)
        finally:
            round_.kill()
    assert raised.value.status == "cancelled" and "room in its control channel" in str(raised.value)
    assert all(gone(p.proc.pid) for p in players)


def test_a_parked_side_that_floods_its_stream_fails_the_round_before_its_backlog_is_read(trees, tmp_path):
    players = contestants(trees, tmp_path, hostile={"base": ["--mode", "flood", "--flood-mib", "40"]})
    failure = failed_round(players, BlockPlan(block_steps=2, blocks=2, block_warmup=1, warmup=1), 120)
    assert failure.side == "base" and "to its stream while parked" in str(failure), failure
    # at most the chunk that held its block record: the 40 MiB backlog was never read into the worker
    assert players[0].records.lines_read <= READ_CHUNK_BYTES + 10


def test_a_side_that_runs_a_cpu_hog_while_parked_fails_the_round_naming_it(trees, tmp_path):
    # blocks of 10 steps of 20 ms: the hog has a fifth of a second a parking to be seen in
    players = contestants(trees, tmp_path, extra={"cand": ["--step-ms", "20"]},
                          hostile={"base": ["--mode", "hog", "--step-ms", "20"]})
    failure = failed_round(players, BlockPlan(block_steps=10, blocks=3, block_warmup=1, warmup=1), 120)
    assert failure.side == "base" and failure.status == "failed", failure
    assert "of CPU while parked" in str(failure) and "% of a CPU" in str(failure)
    assert players[1].parked.excess() is None, "the side that behaved is not blamed"


def test_non_finite_block_times_fail_the_round_naming_the_side_and_the_field(trees, tmp_path):
    players = contestants(trees, tmp_path, hostile={"cand": ["--mode", "inf-times"]})
    failure = failed_round(players, TIMEOUT_PLAN, timeout_s=120)
    assert failure.side == "cand" and "(block 0)" in str(failure), failure
    assert "started=inf" in str(failure) and "ended=-inf" in str(failure)
