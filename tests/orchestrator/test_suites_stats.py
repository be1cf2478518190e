"""Coverage of a suite's geometric-mean interval (``analysis.suites``), by seeded simulation of
many sweeps at once, with what real hosts do: per-process offsets (each run its own), rounds that
are faster or slower as a whole (a burst lasting seconds: every case of the round, both sides),
heavy-tailed run noise (Student t, 3 degrees of freedom) and cases whose true ratios differ."""

from __future__ import annotations

import numpy as np
import pytest

from orchestrator.analysis.suites import geomean_interval

SWEEPS = 4000  # Monte-Carlo error of a 0.95 coverage: 0.0034


def simulate(rng: np.random.Generator, cases: int, rounds: int, sigma: float, *, paired: bool
             ) -> tuple[np.ndarray, np.ndarray, float]:
    """(candidate, baseline) log values ``[SWEEPS, cases, rounds]`` and the true log geometric mean."""
    true_logs = rng.normal(0, 0.2, cases)  # each case its own true change
    shape = (SWEEPS, cases, rounds)
    offsets = sigma * rng.standard_t(3, size=(2, *shape)) / np.sqrt(3)  # per process, heavy-tailed
    base = 1.0 + rng.normal(0, 0.5, (1, cases, 1)) + offsets[0]  # cases of different sizes
    cand = base - offsets[0] + offsets[1] + true_logs[None, :, None]
    if paired:  # a burst slows a whole round, every case and both sides
        burst = np.where(rng.random((SWEEPS, 1, rounds)) < 0.2, rng.exponential(0.3, (SWEEPS, 1, rounds)), 0)
        cand, base = cand + burst, base + burst
    return cand, base, float(true_logs.mean())


@pytest.mark.parametrize("paired", [True, False], ids=["paired", "unpaired"])
@pytest.mark.parametrize("sigma", [0.01, 0.05])
def test_the_geomean_interval_covers_95_percent(paired, sigma):
    rng = np.random.default_rng(11 + int(1000 * sigma) + paired)
    for cases, rounds in ((3, 3), (5, 5), (12, 10), (40, 20)):
        cand, base, truth = simulate(rng, cases, rounds, sigma, paired=paired)
        low, high = geomean_interval(cand, base, paired=paired).bounds(0.95)
        covered = float(np.mean((np.log(low) <= truth) & (np.log(high) >= truth)))
        assert 0.93 <= covered <= 0.97, f"{cases} cases, {rounds} rounds: {covered}"


def test_pairing_cancels_the_bursts_and_averaging_cases_narrows_the_interval():
    rng = np.random.default_rng(5)
    cand, base, _ = simulate(rng, 8, 6, 0.03, paired=True)
    paired = geomean_interval(cand, base, paired=True)
    unpaired = geomean_interval(cand, base, paired=False)
    assert np.median(paired.se) < 0.5 * np.median(unpaired.se), "the rounds' bursts cancel in pairs"
    one_case = geomean_interval(cand[:, :1], base[:, :1], paired=True)
    assert np.median(paired.se) < 0.5 * np.median(one_case.se), "eight cases average their noise"
