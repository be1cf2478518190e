"""Change points of per-sweep medians: seeded simulations (two steps and an outlier sweep are found as
exactly the two steps; flat histories rarely raise one), and where they show: history and drift."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pandas as pd
import pytest
from test_drift import write_runs

from orchestrator.analysis.changepoints import level_interval, segments, sweep_shifts
from orchestrator.analysis.history_model import HistoryQuery, case_history_of
from orchestrator.analysis.report_model import make_report
from orchestrator.render.history import history_markdown, history_page
from orchestrator.render.markdown import report_markdown, to_frame

NOISE = 0.01  # log sigma of a per-sweep median


def change_points(values: list[float]) -> list[int]:
    """The indices where a new segment starts (never 0)."""
    return [segment.start for segment in segments(values)[1:]]


def two_steps_and_an_outlier(seed: int, step: float = 0.10) -> tuple[np.ndarray, int, int, int]:
    """A history of 14..40 sweep medians: +step at ``a``, -step at ``b``, one sweep 30 % off at ``o``."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(14, 41))
    while True:
        a, b = sorted(int(x) for x in rng.choice(np.arange(3, n - 2), 2, replace=False))
        o = int(rng.integers(n))
        if b - a >= 3 and min(abs(o - a), abs(o - b), abs(o - a + 1), abs(o - b + 1)) >= 2:
            break
    level = np.full(n, 50_000.0)
    level[a:] *= 1 + step
    level[b:] *= 1 - step
    values = level * np.exp(rng.normal(0.0, NOISE, n))
    values[o] *= 1.3 if rng.random() < 0.5 else 0.7
    return values, a, b, o


@pytest.mark.parametrize("seed", range(25))
def test_two_steps_are_found_and_the_outlier_sweep_is_not(seed):
    values, a, b, o = two_steps_and_an_outlier(seed)
    assert change_points(values) == [a, b], f"outlier at {o}"


def test_flat_histories_rarely_raise_a_change_point():
    false_alarms = 0
    for seed in range(200):
        rng = np.random.default_rng(10_000 + seed)
        values = 50_000 * np.exp(rng.normal(0.0, NOISE, int(rng.integers(8, 40))))
        values[rng.integers(len(values))] *= 1.3  # an outlier sweep is not a shift either
        false_alarms += bool(change_points(values))
    assert false_alarms / 200 <= 0.05  # about 1.6 % over 500 seeds of 8..60 sweeps


def sweep_medians(seed: int, n: int, at: int, ratio: float, offsets: float, runs: int = 5) -> np.ndarray:
    """Per-sweep medians of ``runs`` runs: 1 % lognormal run noise, one run in 20 slowed 10-40 % (a
    burst), each sweep at its own level (heavy-tailed: ``offsets`` times Student's t with 3 degrees of
    freedom), the true level times ``ratio`` from sweep ``at`` on."""
    rng = np.random.default_rng(seed)
    level = np.where(np.arange(n) >= at, ratio, 1.0) * np.exp(offsets * rng.standard_t(3, n))
    values = level[:, None] * rng.lognormal(0.0, 0.01, (n, runs))
    burst = rng.random((n, runs)) < 0.05
    values[burst] /= rng.uniform(1.1, 1.4, burst.sum())
    return np.median(values, axis=1)


@pytest.mark.parametrize(("n", "at", "ratio", "offsets"), [
    (12, 6, 0.90, 0.005), (20, 10, 0.90, 0.01), (40, 30, 0.95, 0.005), (60, 20, 0.97, 0.005)])
def test_the_interval_of_a_change_point_covers_the_true_change(n, at, ratio, offsets):
    """Given where the level changed, the 95 % interval of the change covers the true ratio in
    93-97 % of 600 seeded histories (measured 94.2-95.3 % over 1000; a change point a flat history
    raises, 1.4 % of them, gets an interval that excludes 1: it says where, not whether)."""
    covered = found = 0
    for seed in range(600):
        values = sweep_medians(20_000 + seed, n, at, ratio, offsets)
        found_segments = segments(values)
        starts = [segment.start for segment in found_segments]
        if at not in starts:
            continue
        i = starts.index(at)
        before, after = found_segments[i - 1], found_segments[i]
        low, high = level_interval(values[before.start:before.end], values[after.start:after.end])
        found += 1
        covered += low <= ratio <= high
    assert found >= 450, "the change point is found where it is"
    assert 0.93 <= covered / found <= 0.97


def test_short_or_constant_series_have_no_change_point():
    assert change_points([]) == change_points([1.0, 2.0, 3.0]) == change_points([5.0] * 10) == []


def history_frame(values: np.ndarray, runs_per_sweep: int = 3) -> pd.DataFrame:
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    rows = [{"started_at": pd.Timestamp(t0 + timedelta(hours=i, minutes=r)), "sweep_id": f"s-{i:02d}",
             "side": "main", "sha": f"{i:040x}", "variant": "manager", "status": "ok", "error": None,
             "settings": "P1", "params": "{}", "command": "[]",
             "throughput": value * (1 + 0.001 * (r - 1))}
            for i, value in enumerate(values) for r in range(runs_per_sweep)]
    return pd.DataFrame(rows)


def test_history_marks_the_sweeps_that_start_a_new_level(seed=3):
    values, a, b, o = two_steps_and_an_outlier(seed)
    history = history_frame(values)
    shifts = sweep_shifts(history, "throughput")
    assert [s.sweep_id for s in shifts] == [f"s-{a:02d}", f"s-{b:02d}"]
    assert shifts[0].change == pytest.approx(0.10, abs=0.02)
    assert shifts[1].change == pytest.approx(-0.10, abs=0.02)
    md = history_markdown(case_history_of(history, HistoryQuery(case="sac/fake/none")))
    assert md.count("new level") == 2 and f"change point: side main at sweep s-{a:02d}" in md
    assert f"s-{o:02d}" not in "".join(line for line in md.splitlines() if "change point" in line)
    html = history_page(case_history_of(history, HistoryQuery(case="sac/fake/none"))).render()
    assert "dashed: change points" in html and "new level" in html


def test_the_drift_section_says_when_the_median_sits_in_a_new_segment(tmp_path):
    for day, base in enumerate([100.0, 101.0, 99.0, 100.0, 90.0, 91.0]):
        write_runs(tmp_path, f"ab-202601{day + 1:02d}T000000", day, [base, base + 0.5, base - 0.5],
                   [200.0, 200.5, 199.5])
    write_runs(tmp_path, "ab-20260110T000000", 9, [90.5, 91.0, 90.0], [200.0, 201.0, 199.0])
    report = make_report(tmp_path, "ab-20260110T000000")
    moved = {d.side: d.new_segment_since for d in report.drift if d.metric == "throughput"}
    assert moved == {"base": "ab-20260105T000000", "cand": None}
    md = report_markdown(report)
    assert "base throughput: the median sits in a new segment of its history, begun by sweep " \
           "ab-20260105T000000" in md
    assert "new since ab-20260105T000000" in md
    csv = to_frame(report).set_index(["side", "metric"])
    assert csv.loc[("base", "throughput"), "new_segment_since"] == "ab-20260105T000000"
    assert pd.isna(csv.loc[("cand", "throughput"), "new_segment_since"])


@pytest.mark.parametrize("seed", range(3))
def test_the_partition_is_the_one_pelt_finds(seed: int) -> None:
    """The dynamic programme returns exactly the change points of ``ruptures.Pelt`` (L1 cost, segments
    of at least 3, the same penalty) on seeded histories with shifts and outliers of every size."""
    import math

    import ruptures

    from orchestrator.analysis import changepoints

    rng = np.random.default_rng(seed)
    for _ in range(60):
        n = int(rng.integers(6, 90))
        values = 100.0 * np.exp(rng.normal(0.0, rng.choice([0.002, 0.01, 0.05]), n))
        for _ in range(int(rng.integers(0, 3))):
            values[int(rng.integers(1, n)):] *= 1 + rng.choice([-1, 1]) * rng.uniform(0.01, 0.3)
        values[int(rng.integers(n))] *= rng.uniform(0.5, 1.5)
        penalty = changepoints.PENALTY_SIGMAS * changepoints.noise_scale(values) * math.log(n)
        expected = ruptures.Pelt(model="l1", min_size=changepoints.MIN_SEGMENT, jump=1).fit(
            values.reshape(-1, 1)).predict(pen=penalty)
        assert [segment.end for segment in segments(values)] == expected, values.tolist()
