"""``analysis.rank_tests`` and ``analysis.distributions`` give the p-values and quantiles
``scipy.stats`` gives, branch by branch (exact, enumerated, approximate; with and without ties and
zeros), on seeded random samples of every size the branches switch at."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from orchestrator.analysis import distributions, rank_tests

RTOL = 1e-9


def samples(rng: np.random.Generator, size: int, kind: str) -> np.ndarray:
    """Continuous values, or values on a coarse grid (ties), or a grid with zeros."""
    if kind == "continuous":
        return rng.normal(0.1, 1.0, size)
    values = np.round(rng.normal(0.3, 1.0, size) * 2) / 2
    return values if kind == "grid" else np.where(rng.random(size) < 0.2, 0.0, values)


@pytest.mark.parametrize("kind", ["continuous", "grid"])
def test_mann_whitney_matches_scipy(kind):
    rng = np.random.default_rng(11)
    for n1 in range(1, 13):
        for n2 in (1, 2, 3, 5, 8, 9, 12, 30):
            for _ in range(3):
                x, y = samples(rng, n1, kind), samples(rng, n2, kind) + rng.choice([0.0, 0.8])
                expected = stats.mannwhitneyu(x, y, alternative="two-sided").pvalue
                assert rank_tests.mann_whitney_p(x, y) == pytest.approx(expected, rel=RTOL), (x, y)


def test_mann_whitney_of_identical_values_is_one():
    same = np.ones(4), np.ones(3)
    assert rank_tests.mann_whitney_p(*same) == stats.mannwhitneyu(*same).pvalue == 1.0


@pytest.mark.parametrize("kind", ["continuous", "grid", "zeros"])
def test_wilcoxon_matches_scipy(kind):
    rng = np.random.default_rng(12)
    for n in (1, 2, 3, 4, 6, 9, 13, 14, 15, 20, 35, 50, 51, 70):  # the branches switch at 13 and 50
        for _ in range(1 if n == 13 else 3):  # scipy enumerates 2^13 sign assignments in 1.5 s
            d = samples(rng, n, kind)
            if not d.any():
                continue
            expected = stats.wilcoxon(d).pvalue
            assert rank_tests.wilcoxon_p(d) == pytest.approx(expected, rel=RTOL), d


def test_kruskal_matches_scipy():
    rng = np.random.default_rng(13)
    for groups in (2, 3, 5):
        for kind in ("continuous", "grid"):
            for _ in range(5):
                data = [samples(rng, int(rng.integers(3, 15)), kind) + rng.choice([0.0, 0.5])
                        for _ in range(groups)]
                expected = stats.kruskal(*data).pvalue
                assert rank_tests.kruskal_p(data) == pytest.approx(expected, rel=RTOL), data


def test_average_ranks_share_the_mean_rank_of_a_tie():
    ranks, sizes = rank_tests.average_ranks(np.array([3.0, 1.0, 3.0, 2.0, 3.0]))
    assert ranks.tolist() == [4.0, 1.0, 4.0, 2.0, 4.0] and sorted(sizes.tolist()) == [1, 1, 3]


def test_quantiles_and_tails_are_scipy_stats_own():
    rng = np.random.default_rng(14)
    p = np.r_[0.0, 1.0, 0.5, rng.uniform(0, 1, 500)]
    df = np.r_[3.0, 3.0, np.inf, np.exp(rng.uniform(-2, 9, 500))]
    df[::50] = np.inf
    np.testing.assert_array_equal(distributions.t_quantile(p, df), stats.t.ppf(p, df))
    assert np.isnan(distributions.t_quantile(0.9, 0.0)) and np.isnan(distributions.t_quantile(0.9, np.nan))
    assert np.isnan(distributions.t_quantile(1.5, 3.0))
    z = rng.normal(0, 3, 200)
    np.testing.assert_array_equal(distributions.normal_sf(z), stats.norm.sf(z))
    for k in (1, 2, 4):
        x = rng.uniform(0, 20)
        assert distributions.chi2_sf(x, k) == pytest.approx(stats.chi2.sf(x, k), rel=1e-12)


@pytest.mark.parametrize("kind", ["continuous", "grid", "zeros"])
def test_rank_tests_of_many_rows_at_once_give_each_rows_own_p_value(kind):
    """The rows a report tests together (``*_p_rows``, its cells of one shape) get the p-value each
    row gets alone, bit for bit, whichever branch decides the row."""
    rng = np.random.default_rng(14)
    for n in (1, 2, 3, 6, 9, 14, 50, 51):
        differences = np.array([samples(rng, n, kind) for _ in range(60)])
        differences = differences[differences.any(axis=1)]
        alone = [rank_tests.wilcoxon_p(row) for row in differences]
        assert rank_tests.wilcoxon_p_rows(differences).tolist() == alone
    for n1, n2 in ((1, 3), (3, 3), (5, 8), (8, 30), (9, 12)):
        x = np.array([samples(rng, n1, kind) for _ in range(60)])
        y = np.array([samples(rng, n2, kind) + 0.5 for _ in range(60)])
        alone = [rank_tests.mann_whitney_p(a, b) for a, b in zip(x, y, strict=True)]
        assert rank_tests.mann_whitney_p_rows(x, y).tolist() == alone
