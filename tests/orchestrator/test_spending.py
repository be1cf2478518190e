"""The group-sequential boundaries (``analysis.spending``): the band computed for correlated looks is
left with the probability it claims, by normal sums and, at the t share, by the reports' t intervals.
Seeded simulations; ``benchmarks/spending_calibration.py`` runs the t check over many designs."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special

from orchestrator.analysis import power, spending
from orchestrator.analysis.sequential import Looks
from orchestrator.spec.schema import Spending

BOUNDARIES = [Spending.pocock, Spending.obrien_fleming]


@pytest.mark.parametrize("kind", BOUNDARIES)
@pytest.mark.parametrize("first, last", [(3, 30), (2, 8)])
def test_normal_sums_leave_the_band_with_the_probability_it_spends(kind, first, last):
    """400,000 simulated sweeps of normal rounds: the share that leaves the band at some look is
    alpha (4 standard errors: 0.0014), and at each look what the spending function adds there."""
    levels = np.array(spending.normal_levels(first, last, 0.05, kind))
    rng = np.random.default_rng(first * 100 + last)
    sums = np.cumsum(rng.normal(size=(400_000, last)), axis=1)[:, first - 1:]
    outside = np.abs(sums / np.sqrt(np.arange(first, last + 1))) >= special.ndtri(1 - levels / 2)
    assert abs(outside.any(axis=1).mean() - 0.05) < 0.0014
    first_exit = np.argmax(outside, axis=1)[outside.any(axis=1)]
    spent = np.bincount(first_exit, minlength=levels.size).cumsum() / outside.shape[0]
    expected = [spending.spent(kind, 0.05, n / last) for n in range(first, last + 1)]
    assert spent == pytest.approx(expected, abs=0.0015)


@pytest.mark.parametrize("kind", BOUNDARIES)
@pytest.mark.parametrize("first, last, closing", [(3, 30, 12), (2, 26, 21)])
def test_a_band_its_budget_closes_early_spends_the_rest_of_alpha_at_its_last_look(kind, first, last, closing):
    """A sweep its time budget ends after ``closing`` rounds: the looks before keep their planned
    levels, and 400,000 simulated normal sweeps leave the closed band in alpha (4 standard errors),
    where the planned band, cut there, spends much less (O'Brien-Fleming: most of it is late)."""
    planned = np.array(spending.normal_levels(first, last, 0.05, kind))
    closed = np.array(spending.normal_levels(first, last, 0.05, kind, closing))
    assert closed.size == closing - first + 1 and (closed[:-1] == planned[:closing - first]).all()
    assert closed[-1] > planned[closing - first]
    rng = np.random.default_rng(closing)
    sums = np.cumsum(rng.normal(size=(400_000, closing)), axis=1)[:, first - 1:]
    scaled = np.abs(sums / np.sqrt(np.arange(first, closing + 1)))
    assert abs((scaled >= special.ndtri(1 - closed / 2)).any(axis=1).mean() - 0.05) < 0.0014
    cut = (scaled >= special.ndtri(1 - planned[:closing - first + 1] / 2)).any(axis=1).mean()
    assert cut == pytest.approx(spending.spent(kind, 0.05, closing / last), abs=0.0015)
    even = spending.look_levels(first, last, 0.05, Spending.even, closing)
    assert len(even) == closing - first + 1 and sum(even) == pytest.approx(0.05), "the union bound's rest"


def test_a_look_reads_more_than_its_even_share_and_the_first_look_what_the_function_spends():
    pocock = spending.look_levels(3, 30, 0.05, Spending.pocock)
    even = spending.look_levels(3, 30, 0.05, Spending.even)
    assert sum(even) == pytest.approx(0.05) and even[0] == pytest.approx(0.005)
    assert pocock[0] == pytest.approx(spending.spent(Spending.pocock, spending.T_SHARE * 0.05, 0.1))
    assert all(p > e for p, e in zip(pocock[1:], even[1:], strict=True)), "correlated looks spend less each"
    fleming = spending.look_levels(3, 30, 0.05, Spending.obrien_fleming)
    assert fleming[0] < 1e-8 and fleming[-1] > pocock[-1], "little early, most late"
    assert spending.look_levels(1, 4, 0.05, Spending.pocock)[0] == 0.0, "a look of one round cannot decide"


@pytest.mark.parametrize("kind", BOUNDARIES)
@pytest.mark.parametrize("paired", [True, False], ids=["paired", "unpaired"])
@pytest.mark.parametrize("first, last, closing", [(3, 30, None), (2, 10, None), (3, 30, 12), (2, 26, 21)])
def test_the_reports_t_intervals_miss_the_truth_in_at_most_alpha_of_sweeps(kind, paired, first, last,
                                                                            closing):
    """Trimmed t intervals of 2 to 30 rounds at each look's level, the planned looks or the looks a
    budget closed early: some look misses the truth in at most 5 % of 20,000 sweeps; at the normal
    band for the full alpha, more (why ``T_SHARE``)."""
    rng = np.random.default_rng(first + last + paired)
    looks = Looks(first, last, kind, closing)
    cand, base = rng.normal(size=(2, 20_000, looks.final))
    t, df = power.truth_statistics(cand, base, range(first, looks.final + 1), paired=paired)
    levels = np.array([looks.level_at(n, 0.05) for n in range(first, looks.final + 1)])
    assert power.missed(t, df, levels) <= 0.05
    if paired and closing is None:
        assert power.missed(t, df, np.array(spending.normal_levels(first, last, 0.05, kind))) > 0.053
