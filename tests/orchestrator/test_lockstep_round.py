"""A lockstep round with real bench processes (``worker.lockstep_round``): exactly one process runs at any
instant, start-up included, and every way a round can fail names the side, its SHA and what the
round awaited, with every process of the round killed."""

from __future__ import annotations

import math
import os
import sys
import threading
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

BENCH = Path(__file__).with_name("fakebench") / "lockstep_bench.py"
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


def contestants(trees: dict, logs: Path, extra: dict[str, list[str]] | None = None) -> list[Contestant]:
    found = []
    for side, (tree, sha) in trees.items():
        stream, control = logs / f"{side}.jsonl", logs / f"{side}.fifo"
        argv = [sys.executable, "lockstep_bench.py", "--stream", str(stream), "--control", str(control),
                *(extra or {}).get(side, [])]

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
