"""The report's statistics: small pure functions over per-run values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from orchestrator.analysis import stats


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


ROUNDS = [100.0, 110.0, 120.0, 130.0, 140.0]  # a machine drifting round by round


def test_compare_gives_the_ratio_of_medians_and_a_reproducible_interval_around_it():
    first = stats.compare([180.0, 200.0, 220.0], [90.0, 100.0, 110.0], resamples=2000, seed=7)
    again = stats.compare([180.0, 200.0, 220.0], [90.0, 100.0, 110.0], resamples=2000, seed=7)
    assert first == again, "seeded: the same inputs give the same interval"
    assert first.ratio == 2.0 and first.low <= 2.0 <= first.high
    assert first.low >= 180 / 110 and first.high <= 220 / 90, "a resampled median is one of the values"
    assert (first.n_candidate, first.n_baseline, first.paired) == (3, 3, False)


def test_pairing_by_round_cancels_what_hit_a_whole_round():
    candidate = [0.95 * v for v in ROUNDS]
    paired = stats.compare(candidate, ROUNDS, paired=True)
    unpaired = stats.compare(candidate, ROUNDS, paired=False)
    assert paired.low == pytest.approx(0.95) and paired.high == pytest.approx(0.95)
    assert unpaired.low < 0.85 and unpaired.high > 1.05, "each side resampled alone sees the drift"


def test_paired_rounds_with_a_missing_value_are_dropped_from_both_sides():
    result = stats.compare([1.0, None, 3.0, 4.0], [2.0, 2.0, float("nan"), 8.0], paired=True)
    assert (result.n_candidate, result.n_baseline) == (2, 2) and result.ratio == pytest.approx(0.5)
    with pytest.raises(ValueError, match="differ in length"):
        stats.compare([1.0, 2.0], [1.0, 2.0, 3.0], paired=True)


def test_no_interval_from_one_run_or_a_zero_baseline():
    assert not stats.compare([1.0, 2.0], [3.0]).has_interval
    zero = stats.compare([1.0, 2.0, 3.0], [0.0, 1.0, 2.0])
    assert not zero.has_interval and zero.ratio == 2.0, "a resample could have a baseline median of 0"
    assert math.isnan(stats.compare([1.0, 2.0], []).p_value)


def test_mann_whitney_p_values():
    separated = stats.mann_whitney_p(np.array([6.0, 7, 8, 9, 10]), np.array([1.0, 2, 3, 4, 5]))
    assert separated == pytest.approx(2 / 252), "exact: 2 of the C(10, 5) orderings are this extreme"
    assert stats.mann_whitney_p(np.array([1.0, 3, 5]), np.array([2.0, 4, 6])) > 0.5
    assert stats.mann_whitney_p(np.array(ROUNDS), np.array(ROUNDS)) == pytest.approx(1.0)
