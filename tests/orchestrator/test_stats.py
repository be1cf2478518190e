"""The report's statistics: small pure functions over per-run values."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from orchestrator.analysis import stats
from orchestrator.analysis.cells import cell_summaries


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
NOISE = [1.004, 0.993, 1.011, 0.998, 0.990]  # per-run noise of the candidate on top of the drift


def test_compare_gives_the_ratio_of_medians_and_a_t_interval_on_the_log_scale():
    cand, base = [180.0, 200.0, 220.0], [90.0, 100.0, 110.0]
    result = stats.compare(cand, base)
    assert result == stats.compare(cand, base), "deterministic: no resampling"
    assert result.ratio == 2.0 and (result.n_candidate, result.n_baseline, result.paired) == (3, 3, False)
    expected = sps.ttest_ind(np.log(cand), np.log(base)).confidence_interval(0.95)
    assert (result.low, result.high) == pytest.approx((math.exp(expected.low), math.exp(expected.high)))
    assert result.low < 180 / 110 and result.high > 220 / 90, (
        "at n=3 the interval is not pinned to [min/max, max/min] as a percentile bootstrap's is")
    wide = result.at(0.999)
    assert wide.low < result.low and wide.high > result.high and wide.confidence == 0.999


def test_pairing_by_round_cancels_what_hit_a_whole_round():
    candidate = [0.95 * v * e for v, e in zip(ROUNDS, NOISE, strict=True)]
    paired = stats.compare(candidate, ROUNDS, paired=True)
    unpaired = stats.compare(candidate, ROUNDS, paired=False)
    logs = np.log(candidate) - np.log(ROUNDS)
    expected = sps.ttest_1samp(logs, 0.0).confidence_interval(0.95)
    assert (paired.low, paired.high) == pytest.approx((math.exp(expected.low), math.exp(expected.high)))
    assert paired.low < 0.95 < paired.high and paired.high < 0.97, "the per-round noise, not the drift"
    assert unpaired.low < 0.8 and unpaired.high > 1.1, "each side on its own sees the drift"
    assert paired.method.startswith("trimmed t of per-round") and "two-sample" in unpaired.method
    assert paired.p_value == pytest.approx(sps.wilcoxon(logs).pvalue) and paired.p_value == 1 / 16


def test_ten_rounds_trim_one_disturbed_round_from_each_end():
    rng = np.random.default_rng(3)
    base = 100 * np.exp(rng.normal(0, 0.01, 10))
    cand = 0.95 * base * np.exp(rng.normal(0, 0.01, 10))
    disturbed = cand.copy()
    disturbed[4] *= 0.7  # one run hit by a noisy neighbour
    clean, hit = stats.compare(cand, base, paired=True), stats.compare(disturbed, base, paired=True)
    assert hit.high - hit.low < 2 * (clean.high - clean.low), "the disturbed run is trimmed, not averaged"
    assert abs(math.log(hit.estimate / clean.estimate)) < 0.01


def test_paired_rounds_with_a_missing_value_are_dropped_from_both_sides():
    result = stats.compare([1.0, None, 3.0, 4.0], [2.0, 2.0, float("nan"), 8.0], paired=True)
    assert (result.n_candidate, result.n_baseline) == (2, 2) and result.ratio == pytest.approx(0.5)
    with pytest.raises(ValueError, match="differ in length"):
        stats.compare([1.0, 2.0], [1.0, 2.0, 3.0], paired=True)


def test_no_interval_from_one_run_or_a_zero_value():
    assert not stats.compare([1.0, 2.0], [3.0]).has_interval
    zero = stats.compare([1.0, 2.0, 3.0], [0.0, 1.0, 2.0])
    assert not zero.has_interval and zero.ratio == 2.0, "a log ratio needs positive values"
    assert math.isnan(stats.compare([1.0, 2.0], []).p_value)
    assert math.isnan(zero.bounds(0.9)[0])


def test_rank_p_values():
    separated = stats.rank_p(np.array([6.0, 7, 8, 9, 10]), np.array([1.0, 2, 3, 4, 5]), paired=False)
    assert separated == pytest.approx(2 / 252), "exact: 2 of the C(10, 5) orderings are this extreme"
    assert stats.rank_p(np.array([1.0, 3, 5]), np.array([2.0, 4, 6]), paired=False) > 0.5
    same = np.array(ROUNDS)
    assert stats.rank_p(same, same, paired=False) == pytest.approx(1.0)
    assert stats.rank_p(same, same, paired=True) == 1.0, "no round differs"
    assert stats.rank_p(1.1 * same, same, paired=True) == pytest.approx(2 / 32), "exact signed-rank"


def test_cells_summarised_together_are_summarised_as_alone():
    """``cells.cell_summaries`` summarises the cells of a metric with as many values together: each
    gets the median, min, max and CV of its own values, bit for bit (missing values, a cell without
    any, one value, a mean of 0)."""
    rng = np.random.default_rng(3)
    rows = [{"case": f"c{k % 7}", "side": side, "x": float(value) if rng.random() > 0.1 else None}
            for k in range(90) for side in ("old", "new") for value in [rng.lognormal(0.0, 0.3)]]
    rows += [{"case": "zero", "side": "old", "x": v} for v in (-1.0, 1.0)]
    rows += [{"case": "one", "side": "new", "x": 2.0}]
    ok = pd.DataFrame(rows).sample(frac=1.0, random_state=1)
    cases, sides = [*sorted(ok["case"].unique()), "absent"], ["old", "new"]
    found = cell_summaries(ok, cases, sides, ["x", "y"])
    for case in cases:
        for side in sides:
            mine = ok.loc[(ok["case"] == case) & (ok["side"] == side), "x"]
            alone = stats.Summary(int(mine.notna().sum()), stats.median(mine), stats.minimum(mine),
                                  stats.maximum(mine), stats.cv(mine))
            assert repr(found[case, side, "x"]) == repr(alone) == repr(stats.summarize(mine))
            assert found[case, side, "y"].n == 0
