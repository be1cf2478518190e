"""Lockstep rounds keep the gates' claims: seeded simulations of whole lockstep sweeps on a noisy host.

A lockstep round runs one process per side, both resident, taking turns block by block in
``worker.lockstep.turn_order`` (A B B A ...). Each process reports its throughput over its measured
blocks (the sum of their wall times), and a gate's interval is the paired one over rounds (the
per-round log ratio of the two processes), exactly as for interleaved rounds. The simulated host
has what real ones do (docs/design.md, "Statistics", lockstep):

* (a) a per-process speed offset (memory layout, page placement) that blocks cannot cancel;
* (b) time-correlated noise: bursts of a neighbour lasting several blocks, slowing whatever runs;
* (c) heavy-tailed block noise (Student t with 2 degrees of freedom on the log scale);
* per-step noise, and an extra cost of the first step of every block (caches refilled after the
  other process ran), added in base-step units, so it would pull a real ratio toward 1.

Each block is preceded by its warm-up steps (``block_warmup``), which the bench does not count.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from orchestrator.analysis import intervals, power
from orchestrator.analysis.sequential import Looks
from orchestrator.worker.lockstep import turn_order

SWEEPS = 4000


@dataclass(frozen=True)
class Host:
    """The simulated bench host; every figure is on the log scale unless named otherwise."""

    process_sd: float = 0.0  # (a) per-process offset
    burst_start: float = 0.0  # (b) chance per block slot that a burst begins
    burst_blocks: float = 4.0  # (b) mean burst length, block slots
    burst_slowdown: tuple[float, float] = (1.2, 2.5)  # (b) a burst's factor on step time: uniform in this range
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
             true_ratio: float, order: str = "lockstep") -> tuple[np.ndarray, np.ndarray]:
    """Per-round log throughput ``[sweeps, rounds]`` of the candidate and the baseline process."""
    step_time = {0: 1.0, 1: 1.0 / true_ratio}  # side 0 the baseline, side 1 the candidate
    walls = np.zeros((2, sweeps, rounds))
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
        previous = None
        for side in schedule(order, design, r):
            slowdown = advance()
            k = design.block_steps
            steps = k * np.exp(rng.normal(0.0, host.step_sd / np.sqrt(k), sweeps))
            tail = host.tail_scale * rng.standard_t(2.0, sweeps)
            wall = step_time[side] * np.exp(offsets[side] + tail) * slowdown * steps
            if design.block_warmup == 0 and side != previous:  # the first step after a switch counts
                wall = wall + host.first_step * slowdown
            walls[side, :, r] += wall
            previous = side
        for _ in range(host.gap_blocks):
            advance()
    return -np.log(walls[1]), -np.log(walls[0])


def coverage(cand: np.ndarray, base: np.ndarray, truth: float) -> float:
    low, high = intervals.paired(cand - base).bounds(0.95)
    return float(np.mean((low <= truth) & (truth <= high)))


HOSTS = {
    "offset": Host(process_sd=0.02),
    "bursts": Host(burst_start=0.08),
    "heavy tails": Host(tail_scale=0.02),
    "all": NOISY,
}


@pytest.mark.parametrize("name", list(HOSTS))
def test_the_95_percent_interval_over_rounds_covers_95_percent(name):
    rng = np.random.default_rng(sorted(HOSTS).index(name))
    cand, base = simulate(rng, SWEEPS, 20, HOSTS[name], Design(), true_ratio=0.9)
    for n in (3, 5, 10, 20):
        assert 0.93 <= coverage(cand[:, :n], base[:, :n], 0.9) <= 0.97, f"n={n}"


def test_the_first_step_of_a_block_pulls_a_real_ratio_toward_1_unless_it_is_warm_up():
    rng = np.random.default_rng(5)
    kept = simulate(rng, SWEEPS, 20, NOISY, Design(block_warmup=0), true_ratio=0.9)
    dropped = simulate(rng, SWEEPS, 20, NOISY, Design(block_warmup=1), true_ratio=0.9)
    bias_kept = np.exp(np.mean(kept[0] - kept[1])) / 0.9 - 1
    bias_dropped = np.exp(np.mean(dropped[0] - dropped[1])) / 0.9 - 1
    assert bias_kept > 0.005, "a first step 0.5 base steps dearer moves 0.9 toward 1 by ~1 %"
    assert abs(bias_dropped) < 0.002
    assert coverage(*kept, 0.9) < 0.93 <= coverage(*dropped, 0.9)


def test_an_aa_comparison_is_unbiased_whether_or_not_the_first_step_is_dropped():
    rng = np.random.default_rng(6)
    for warmup in (0, 1):
        cand, base = simulate(rng, SWEEPS, 20, NOISY, Design(block_warmup=warmup), true_ratio=1.0)
        assert abs(np.mean(cand - base)) < 0.001
        assert 0.93 <= coverage(cand, base, 1.0) <= 0.97


def test_with_the_truth_on_the_bound_the_adaptive_design_claims_at_most_5_percent():
    rng = np.random.default_rng(7)
    looks = Looks(3, 30)
    cand, base = simulate(rng, 2000, looks.last, NOISY, Design(), true_ratio=0.97)
    result = power.decide(cand, base, looks, min_ratio=0.97)
    assert result.rate(power.PASS) + result.rate(power.FAIL) <= 0.05


def test_a_10_percent_slowdown_fails_and_an_aa_sweep_passes_a_097_gate():
    rng = np.random.default_rng(8)
    looks = Looks(3, 30)
    slow = power.decide(*simulate(rng, 2000, looks.last, NOISY, Design(), true_ratio=1 / 1.1), looks,
                        min_ratio=0.97)
    same = power.decide(*simulate(rng, 2000, looks.last, NOISY, Design(), true_ratio=1.0), looks,
                        min_ratio=0.97)
    assert slow.rate(power.FAIL) >= 0.90 and slow.rate(power.PASS) == 0
    assert same.rate(power.PASS) >= 0.80 and same.rate(power.FAIL) <= 0.01


def test_pairing_blocks_cancels_bursts_that_separate_processes_cannot():
    rng = np.random.default_rng(9)
    host = Host(burst_start=0.08, burst_blocks=6)
    sd = {}
    for order in ("lockstep", "interleaved"):
        cand, base = simulate(rng, 500, 10, host, Design(), true_ratio=0.9, order=order)
        sd[order] = np.median(np.std(cand - base, axis=1, ddof=1))
        assert 0.93 <= coverage(cand, base, 0.9) <= 0.97 or order == "interleaved"
    assert sd["lockstep"] < sd["interleaved"] / 3
