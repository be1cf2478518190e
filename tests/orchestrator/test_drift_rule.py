"""The drift rule by seeded simulation: how often it flags a flat history, and how often a real shift.

A simulated run's value is a machine level times a per-process offset (each run is its own process:
heavy-tailed, Student t with 3 degrees of freedom, scale 1.5 %) and, for one run in twenty, a burst
that slows it 10-40 %. "Flat" means the machine's level never moves; with sweep offsets each sweep
(this one and every earlier one) also sits at its own level, 1 % apart. The rule under test is the
report's: ``Drift.flagged`` on ``stats.change_interval`` of this sweep's runs against the earlier
sweeps' runs, the change measured against the median of their medians, the default threshold.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_drift import CURRENT, drift_of, write_runs

from orchestrator.analysis import stats
from orchestrator.analysis.drift import Drift
from orchestrator.analysis.report_model import make_report
from orchestrator.spec.schema import SweepSpec

THRESHOLD = SweepSpec.drift_threshold  # the default, 3 %
TRIALS = 600  # Monte-Carlo error of a 5 % rate: 0.9 %


def sweep_values(rng: np.random.Generator, n: int, sweep_offset: float, shift: float = 1.0) -> np.ndarray:
    logs = rng.normal(0.0, sweep_offset) + 0.015 * rng.standard_t(3, n) + np.log(shift)
    burst = rng.random(n) < 0.05
    return 100.0 * np.exp(logs + np.where(burst, np.log1p(rng.uniform(0.1, 0.4, n)), 0.0))


def flag_rate(seed: int, earlier: int, runs: int, sweep_offset: float = 0.0, shift: float = 1.0,
              trials: int = TRIALS) -> float:
    """The share of simulated cells the rule flags: ``earlier`` sweeps of history, ``runs`` per sweep."""
    rng = np.random.default_rng(seed)
    flagged = 0
    for _ in range(trials):
        history = [sweep_values(rng, runs, sweep_offset) for _ in range(earlier)]
        now = sweep_values(rng, runs, sweep_offset, shift)
        reference = float(np.median([np.median(sweep) for sweep in history]))
        interval = stats.change_interval(now, np.concatenate(history), history)
        drift = Drift("case", "side", "metric", float(np.median(now)), reference, earlier, "earlier",
                      reference, THRESHOLD, interval=interval)
        flagged += drift.flagged
    return flagged / trials


@pytest.mark.parametrize(("earlier", "runs"), [(1, 3), (3, 5), (10, 3)])
def test_a_flat_history_is_flagged_in_at_most_5_percent_of_cells(earlier, runs):
    assert flag_rate(100 + 10 * earlier + runs, earlier, runs) <= 0.05


@pytest.mark.parametrize(("earlier", "runs"), [(3, 5), (10, 5)])
def test_sweep_to_sweep_offsets_the_history_shows_are_noise_not_drift(earlier, runs):
    """Each sweep at its own level (1 % apart): three or more earlier sweeps show that spread, and
    the interval is widened by it (one earlier sweep cannot show it: docs/design.md, "Statistics")."""
    assert flag_rate(200 + 10 * earlier + runs, earlier, runs, sweep_offset=0.01) <= 0.05


def test_a_real_shift_is_flagged():
    """The machine 10 % slower than its history (3 earlier sweeps of 5 runs, sweep offsets of 1 %)."""
    assert flag_rate(300, 3, 5, sweep_offset=0.01, shift=0.9, trials=300) >= 0.7


def test_a_noisy_figure_that_moved_within_its_noise_is_not_drift(tmp_path):
    """A 30 ms CPU-time-like figure, noisy run to run: +73 % on the median is inside its noise, while
    a steady figure's 10 % move is outside and flagged (the old fixed 3 % flagged both)."""
    noisy = {"ab-20260101T000000": [0.020, 0.050, 0.030], "ab-20260102T000000": [0.040, 0.020, 0.030],
             CURRENT: [0.052, 0.030, 0.070]}
    steady = {"ab-20260101T000000": [100.0, 101.0, 99.0], "ab-20260102T000000": [100.5, 99.5, 100.0],
              CURRENT: [90.0, 90.5, 89.5]}
    for day, sweep in enumerate(noisy, start=1):
        write_runs(tmp_path, sweep, day, steady[sweep], noisy[sweep])
    report = make_report(tmp_path, CURRENT)
    moved = drift_of(report, "cand")
    assert moved.change == pytest.approx(0.052 / 0.030 - 1) and not moved.flagged  # +73 %
    assert moved.interval.low < 1 < moved.interval.high
    assert drift_of(report, "base").flagged
