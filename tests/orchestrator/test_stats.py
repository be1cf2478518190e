"""The report's statistics: small pure functions over per-run values."""

from __future__ import annotations

import math

import pytest

from orchestrator import stats


def test_median_min_max_ignore_missing_values():
    values = [3.0, None, 1.0, float("nan"), 2.0, 10.0]
    assert stats.median(values) == 2.5
    assert stats.minimum(values) == 1.0
    assert stats.maximum(values) == 10.0


def test_cv_is_population_std_over_mean():
    assert stats.cv([1.0, 3.0]) == pytest.approx(0.5)  # std (ddof=0) 1, mean 2
    assert stats.cv([5.0, 5.0, 5.0]) == 0.0
    assert stats.cv([-1.0, -3.0]) == pytest.approx(0.5), "CV is relative to |mean|"


def test_empty_and_degenerate_inputs_give_nan():
    for func in (stats.median, stats.minimum, stats.maximum, stats.cv):
        assert math.isnan(func([]))
        assert math.isnan(func([None, float("nan")]))
    assert math.isnan(stats.cv([1.0, -1.0])), "zero mean has no CV"


def test_ratio():
    assert stats.ratio(3.0, 2.0) == 1.5
    assert math.isnan(stats.ratio(3.0, 0.0))
    assert math.isnan(stats.ratio(math.nan, 2.0))
    assert math.isnan(stats.ratio(2.0, math.nan))


def test_summarize_counts_only_finite_values():
    summary = stats.summarize([4.0, 2.0, None, 6.0])
    assert (summary.n, summary.median, summary.min, summary.max) == (3, 4.0, 2.0, 6.0)
    assert summary.cv == pytest.approx(math.sqrt(8 / 3) / 4)
