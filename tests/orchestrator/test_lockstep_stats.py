"""Lockstep rounds keep the gates' claims: seeded simulations of whole lockstep sweeps on a noisy host.

A lockstep round runs one process per side, both resident, taking turns block by block in
``worker.lockstep_round.turn_order`` (A B B A ...). Each process reports its throughput over its measured
blocks (the sum of their wall times), and a gate's interval is the paired one over rounds (the
per-round log ratio of the two processes), exactly as for interleaved rounds. The simulated host
has what real ones do (docs/design.md, "Statistics", lockstep):

* (a) a per-process speed offset (memory layout, page placement) that blocks cannot cancel;
* (b) time-correlated noise: bursts of a neighbour lasting several blocks, slowing whatever runs;
* (c) heavy-tailed block noise (Student t with 2 degrees of freedom on the log scale);
* per-step noise, and an extra cost of the first step after a switch (caches refilled after the
  other process ran), added in base-step units, so it would pull a real ratio toward 1. In the
  A B B A order only some blocks follow a switch, so without warm-up steps the pairs would also
  differ in whether their blocks paid it.

Each block is preceded by its warm-up steps (``block_warmup``), which the bench does not count.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest

from orchestrator.analysis import block_pairs, intervals, power
from orchestrator.analysis.sequential import Looks
from orchestrator.analysis.verdicts import Comparer, Verdict, gate_verdict
from orchestrator.spec.schema import GateSpec
from orchestrator.worker.lockstep_round import turn_order

SWEEPS = 4000
GATE = GateSpec(metric="throughput", min_ratio=0.97)


@dataclass(frozen=True)
class Host:
    """The simulated bench host; every figure is on the log scale unless named otherwise."""

    process_sd: float = 0.0  # (a) per-process offset
    burst_start: float = 0.0  # (b) chance per block slot that a burst begins
    burst_blocks: float = 4.0  # (b) mean burst length, block slots
    burst_slowdown: tuple[float, float] = (1.2, 2.5)  # (b) a burst multiplies step time by U(this range)
    tail_scale: float = 0.0  # (c) block noise: tail_scale * t(2)
    step_sd: float = 0.02  # each step's own noise
    first_step: float = 0.0  # extra time of a block's first step, in base steps (additive)
    gap_blocks: int = 12  # block slots between rounds (process start-ups): the bursts go on


@dataclass(frozen=True)
class Design:
    blocks: int = 8  # measured blocks a side per round
    block_steps: int = 5
    block_warmup: int = 1


NOISY = Host(process_sd=0.02, burst_start=0.08, tail_scale=0.01, first_step=0.5)


def schedule(order: str, design: Design, r: int) -> list[int]:
    """The side of every block slot of round ``r``: lockstep's turns, or (``interleaved``) each side's
    process alone, its blocks back to back, the sides' order alternating by round."""
    if order == "lockstep":
        return turn_order(2, design.blocks, first=r)
    first = r % 2
    return [first] * design.blocks + [1 - first] * design.blocks


def simulate(rng: np.random.Generator, sweeps: int, rounds: int, host: Host, design: Design,
             true_ratio: float, order: str = "lockstep") -> np.ndarray:
    """Per-round log ratio estimates ``[sweeps, rounds]`` of the candidate's throughput over the
    baseline's: lockstep's (``analysis.block_pairs``: the median of its block pairs) or, for
    ``interleaved`` processes, the ratio of the two processes' throughputs."""
    step_time = (1.0, 1.0 / true_ratio)  # side 0 the baseline, side 1 the candidate
    estimates = np.zeros((sweeps, rounds))
    burst = np.zeros(sweeps, dtype=bool)
    factor = np.ones(sweeps)

    def advance() -> np.ndarray:
        """One block slot of the host's burst process; the slowdown it applies."""
        nonlocal burst, factor
        ends = burst & (rng.random(sweeps) < 1.0 / host.burst_blocks)
        starts = ~burst & (rng.random(sweeps) < host.burst_start)
        factor = np.where(starts, rng.uniform(*host.burst_slowdown, sweeps), factor)
        burst = (burst & ~ends) | starts
        return np.where(burst, factor, 1.0)

    for r in range(rounds):
        offsets = rng.normal(0.0, host.process_sd, (2, sweeps))
        walls: list[list[np.ndarray]] = [[], []]  # per side, its measured blocks in order
        previous = None
        for side in schedule(order, design, r):
            slowdown = advance()
            k = design.block_steps
            steps = k * np.exp(rng.normal(0.0, host.step_sd / np.sqrt(k), sweeps))
            tail = host.tail_scale * rng.standard_t(2.0, sweeps)
            wall = step_time[side] * np.exp(offsets[side] + tail) * slowdown * steps
            if design.block_warmup == 0 and side != previous:  # the first step after a switch counts
                wall = wall + host.first_step * slowdown
            walls[side].append(wall)
            previous = side
        for _ in range(host.gap_blocks):
            advance()
        base, cand = np.stack(walls[0], axis=-1), np.stack(walls[1], axis=-1)
        if order == "lockstep":  # block i of each side ran in cycle i: a block pair
            estimates[:, r] = block_pairs.round_log_ratios(np.log(base) - np.log(cand))
        else:
            estimates[:, r] = np.log(base.sum(axis=-1)) - np.log(cand.sum(axis=-1))
    return estimates


def coverage(estimates: np.ndarray, truth: float) -> float:
    low, high = intervals.paired(estimates).bounds(0.95)
    return float(np.mean((low <= truth) & (truth <= high)))


HOSTS = {
    "offset": Host(process_sd=0.02),
    "bursts": Host(burst_start=0.08),
    "heavy tails": Host(tail_scale=0.02),
    "all": NOISY,
}


def decide(estimates: np.ndarray, looks: Looks, gate: GateSpec = GATE) -> power.Decisions:
    """The adaptive rule a report applies, on per-round log ratios."""
    return power.decide(estimates, np.zeros_like(estimates), looks, gate)


@pytest.mark.parametrize("name", list(HOSTS))
def test_the_95_percent_interval_over_rounds_covers_95_percent(name):
    rng = np.random.default_rng(sorted(HOSTS).index(name))
    estimates = simulate(rng, SWEEPS, 20, HOSTS[name], Design(), true_ratio=0.9)
    for n in (3, 5, 10, 20):
        assert 0.93 <= coverage(estimates[:, :n], 0.9) <= 0.97, f"n={n}"


def test_the_first_step_of_a_block_pulls_a_real_ratio_toward_1_unless_it_is_warm_up():
    rng = np.random.default_rng(5)
    kept = simulate(rng, SWEEPS, 20, NOISY, Design(block_warmup=0), true_ratio=0.9)
    dropped = simulate(rng, SWEEPS, 20, NOISY, Design(block_warmup=1), true_ratio=0.9)
    assert np.exp(np.mean(kept)) / 0.9 - 1 > 0.005, "a first step 0.5 base steps dearer: ~1 % toward 1"
    assert abs(np.exp(np.mean(dropped)) / 0.9 - 1) < 0.002
    assert 0.93 <= coverage(dropped, 0.9) <= 0.97


def test_an_aa_comparison_is_unbiased_whether_or_not_the_first_step_is_dropped():
    rng = np.random.default_rng(6)
    for warmup in (0, 1):
        estimates = simulate(rng, SWEEPS, 20, NOISY, Design(block_warmup=warmup), true_ratio=1.0)
        assert abs(np.mean(estimates)) < 0.001
    assert 0.93 <= coverage(estimates, 1.0) <= 0.97


def test_with_the_truth_on_the_bound_the_adaptive_design_claims_at_most_5_percent():
    rng = np.random.default_rng(7)
    result = decide(simulate(rng, 2000, 30, NOISY, Design(), true_ratio=0.97), Looks(3, 30))
    assert result.rate(Verdict.PASS) + result.rate(Verdict.FAIL) <= 0.05


def test_a_10_percent_slowdown_fails_and_an_aa_sweep_passes_a_097_gate_early():
    rng = np.random.default_rng(8)
    slow = decide(simulate(rng, 2000, 30, NOISY, Design(), true_ratio=1 / 1.1), Looks(3, 30))
    same = decide(simulate(rng, 2000, 30, NOISY, Design(), true_ratio=1.0), Looks(3, 30))
    assert slow.rate(Verdict.FAIL) >= 0.90 and slow.rate(Verdict.PASS) == 0
    assert same.rate(Verdict.PASS) >= 0.80 and same.rate(Verdict.FAIL) <= 0.01
    assert np.median(slow.rounds) < 30 and np.median(same.rounds) < 30


def test_block_pairs_cancel_bursts_that_separate_processes_cannot():
    rng = np.random.default_rng(9)
    host = Host(burst_start=0.08, burst_blocks=6)
    lock = simulate(rng, 500, 10, host, Design(), true_ratio=0.9)
    apart = simulate(rng, 500, 10, host, Design(), true_ratio=0.9, order="interleaved")
    assert np.median(np.std(lock, axis=1, ddof=1)) < np.median(np.std(apart, axis=1, ddof=1)) / 3
    assert 0.93 <= coverage(lock, 0.9) <= 0.97


def block(cycle, wall_s, throughput, warmup=False, **phases):
    return {"block": cycle, "cycle": None if warmup else cycle, "steps": 5, "wall_s": wall_s,
            "warmup": warmup, "throughput": throughput, "phases": phases}


def test_a_round_is_the_median_of_its_block_pairs_from_the_stored_blocks():
    base = [block(0, 1.0, 100.0, step_ms=10.0), block(1, 1.0, 100.0, step_ms=10.0),
            block(2, 3.0, 30.0, step_ms=30.0), block(9, 9.0, 1.0, warmup=True)]
    cand = [block(0, 1.1, 90.0, step_ms=11.0), block(1, 1.1, 90.0, step_ms=11.0),
            block(2, 1.1, 90.0, step_ms=11.0), block(3, 1.1, 90.0, step_ms=11.0)]
    assert block_pairs.pair_log_ratios(base, cand, "throughput") == pytest.approx(
        [np.log(0.9), np.log(0.9), np.log(3.0)])
    assert block_pairs.round_log_ratio(base, cand, "throughput") == pytest.approx(np.log(0.9))
    assert block_pairs.round_log_ratio(base, cand, "step_ms") == pytest.approx(np.log(1.1))
    assert block_pairs.round_log_ratio(base, cand, "cpu_ms") is None, "a metric no block has: no estimate"


@pytest.mark.parametrize("cell", [None, float("nan"), "not json", "{}", "[1, 2]", '[{"cycle": 0}]'])
def test_malformed_blocks_give_no_pairs(cell):
    blocks = block_pairs.parse_blocks(cell)
    assert block_pairs.round_log_ratio(blocks, blocks, "throughput") is None


def test_reports_read_lockstep_rounds_as_the_simulations_do():
    """The gate a report evaluates on stored runs (their ``blocks``) is ``power.decide`` on the
    per-round medians of block pairs: the rule the simulations above check."""
    rng = np.random.default_rng(12)
    looks = Looks(3, 12)
    for sweep in range(6):
        rows, estimates = [], []
        for r in range(looks.last):
            walls = {side: np.exp(rng.normal(0.0, 0.05, 6)) * (1.0 if side == "old" else 1 / 0.96)
                     for side in ("old", "new")}
            walls["new"][rng.integers(6)] *= 3.0  # a burst hits one block of the candidate
            for side, wall in walls.items():
                blocks = [block(c, float(w), 5 / float(w)) for c, w in enumerate(wall)]
                rows.append({"case": "a/b/c", "side": side, "repeat": r, "blocks": json.dumps(blocks),
                             "throughput": 5 * len(wall) / float(wall.sum())})
            estimates.append(np.median(np.log(walls["old"] / walls["new"])))
        comparer = Comparer(pd.DataFrame(rows), "old", "lockstep")
        assert comparer.round_log_ratios("a/b/c", "new", "throughput") == pytest.approx(estimates)
        gate = GateSpec(metric="throughput", min_ratio=0.97)
        expected = decide(np.array([estimates]), looks)
        verdict = gate_verdict(0, gate, "a/b/c", "new", comparer, looks)
        assert verdict.verdict == Verdict(expected.verdict[0]), sweep


def test_a_lockstep_cells_ratio_is_its_intervals_estimate_not_the_runs_medians():
    """A burst that hits one block of a side slows that run's own throughput (its steps over its
    blocks' time) but not the round's median block pair: the ratio a lockstep cell reports is the
    estimate its interval is built on, so it lies inside that interval (an A/A sweep under a
    neighbour showed 1.167 against its interval [0.972, 1.028] before)."""
    rng = np.random.default_rng(3)
    rows = []
    for r in range(8):
        walls = {side: np.exp(rng.normal(0.0, 0.02, 8)) * (1.0 if side == "old" else 1 / 0.96)
                 for side in ("old", "new")}
        walls["new"][rng.integers(8)] *= 4.0
        for side, wall in walls.items():
            blocks = [block(c, float(w), 5 / float(w)) for c, w in enumerate(wall)]
            rows.append({"case": "a/b/c", "side": side, "repeat": r, "throughput": 5 * len(wall) / wall.sum(),
                         "blocks": json.dumps(blocks)})
    runs = pd.DataFrame(rows)
    comparison = Comparer(runs, "old", "lockstep").compare("a/b/c", "new", "throughput")
    medians = runs.groupby("side")["throughput"].median()
    assert comparison.ratio == pytest.approx(comparison.estimate) == pytest.approx(0.96, abs=0.02)
    assert comparison.low <= comparison.ratio <= comparison.high
    assert medians["new"] / medians["old"] < comparison.low, "the runs' own figures carry the bursts"
