"""Coverage of the verdicts' intervals, measured by seeded simulation of many sweeps at once.

Each simulated cell has lognormal run noise of a given CV; paired cells share a per-round factor
(a machine drifting between rounds) that pairing must cancel. The true ratio is 1, and an interval
"covers" when it contains it. 4000 sweeps per setting: the Monte-Carlo error of a coverage of 0.95 is
0.0034, so the [0.93, 0.97] band is six of those on either side.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from orchestrator.analysis import intervals, stats
from orchestrator.analysis.verdicts import Comparer

SWEEPS = 4000
SIZES = (2, 3, 5, 10, 20)


def lognormal_sigma(cv: float) -> float:
    return float(np.sqrt(np.log1p(cv ** 2)))


def simulate(rng: np.random.Generator, n: int, cv: float, *, paired: bool, contaminated: bool = False,
             cells: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """(candidate, baseline) log values ``[SWEEPS, cells, n]`` of an A/A comparison."""
    sigma = lognormal_sigma(cv)
    shape = (SWEEPS, cells, n)
    cand, base = rng.normal(0, sigma, shape), rng.normal(0, sigma, shape)
    if paired:
        drift = rng.normal(0, 5 * sigma, shape)  # whole rounds faster or slower: cancels in pairs
        cand, base = cand + drift, base + drift
    if contaminated:  # one run in ten disturbed: 30 % slower
        cand = cand + np.where(rng.random(shape) < 0.1, np.log(0.7), 0.0)
        base = base + np.where(rng.random(shape) < 0.1, np.log(0.7), 0.0)
    return cand, base


def coverage(interval: intervals.LogInterval) -> float:
    low, high = interval.bounds(0.95)
    return float(np.mean((low <= 1) & (high >= 1)))


def interval_of(cand: np.ndarray, base: np.ndarray, paired: bool) -> intervals.LogInterval:
    return intervals.paired(cand - base) if paired else intervals.unpaired(cand, base)


@pytest.mark.parametrize("paired", [True, False], ids=["paired", "unpaired"])
@pytest.mark.parametrize("cv", [0.01, 0.05])
def test_the_95_percent_interval_covers_95_percent_at_every_n(paired, cv):
    rng = np.random.default_rng(int(cv * 1000) + paired)
    for n in SIZES:
        cand, base = simulate(rng, n, cv, paired=paired)
        assert 0.93 <= coverage(interval_of(cand[:, 0], base[:, 0], paired)) <= 0.97, f"n={n}"


@pytest.mark.parametrize("paired", [True, False], ids=["paired", "unpaired"])
@pytest.mark.parametrize("cv", [0.01, 0.05])
def test_one_disturbed_run_in_ten_keeps_coverage_above_90_percent(paired, cv):
    rng = np.random.default_rng(100 + int(cv * 1000) + paired)
    for n in SIZES:
        cand, base = simulate(rng, n, cv, paired=paired, contaminated=True)
        assert coverage(interval_of(cand[:, 0], base[:, 0], paired)) >= 0.90, f"n={n}"


def test_trimming_keeps_a_disturbed_run_from_widening_the_interval():
    rng = np.random.default_rng(7)
    clean, _ = simulate(rng, 20, 0.01, paired=False)
    disturbed = clean[:, 0].copy()
    disturbed[:, 0] += np.log(0.7)  # the first run of every sweep 30 % slower
    plain = interval_of(clean[:, 0], np.zeros_like(clean[:, 0]), True)
    hit = interval_of(disturbed, np.zeros_like(disturbed), True)
    assert np.median(hit.se) < 1.5 * np.median(plain.se)


@pytest.mark.parametrize("paired", [True, False], ids=["paired", "unpaired"])
def test_pooled_noise_covers_and_is_narrower_for_small_cells(paired):
    rng = np.random.default_rng(11 + paired)
    cells = 6
    for n in (2, 3, 5):
        cand, base = simulate(rng, n, 0.02, paired=paired, cells=cells)
        if paired:
            spreads = [intervals.spread(cand[:, c] - base[:, c]) for c in range(cells)]
        else:
            spreads = [intervals.spread(side[:, c]) for c in range(cells) for side in (cand, base)]
        variance, df = intervals.pooled_variance(spreads)
        for c in range(cells):
            if paired:
                cell = intervals.with_pooled_noise(spreads[c], variance, df)
                pooled = intervals.LogInterval(cell.center, np.sqrt(cell.term), cell.df)
            else:
                pooled = intervals.difference(*(intervals.with_pooled_noise(s, variance, df)
                                                for s in spreads[2 * c:2 * c + 2]))
            own = interval_of(cand[:, c], base[:, c], paired)
            assert 0.93 <= coverage(pooled) <= 0.97, f"n={n} cell {c}"
            width = [np.median(np.subtract(*reversed(i.bounds(0.95)))) for i in (pooled, own)]
            assert width[0] < width[1], "the sweep's degrees of freedom narrow a small cell's interval"


def test_the_comparer_pools_what_the_intervals_module_pools():
    rng = np.random.default_rng(5)
    rows = [{"case": f"c/{k}/x", "side": side, "repeat": r,
             "throughput": float(100 * np.exp(rng.normal(0, 0.02)))}
            for k in range(3) for side in ("base", "new") for r in range(3)]
    runs = pd.DataFrame(rows)
    pooled = Comparer(runs, "base", "interleaved", noise="pooled")
    own = Comparer(runs, "base", "interleaved")
    logs = []
    for k in range(3):
        values = runs[runs["case"] == f"c/{k}/x"].pivot(index="repeat", columns="side", values="throughput")
        logs.append(np.log(values["new"].to_numpy()) - np.log(values["base"].to_numpy()))
    variance = np.mean([np.var(d, ddof=1) for d in logs])  # equal n: the plain mean of the variances
    result = pooled.compare("c/0/x", "new", "throughput")
    assert result.se == pytest.approx(np.sqrt(variance / 3)) and result.df == 6
    assert result.method.startswith("pooled-noise")
    assert not own.compare("c/0/x", "new", "throughput").method.startswith("pooled")
    assert result.estimate == pytest.approx(stats.compare(np.exp(logs[0]), np.ones(3), paired=True).estimate)
