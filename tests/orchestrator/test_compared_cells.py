"""Every cell of a metric compared at once (``analysis.compared_cells``) gives each cell the comparison
it gets alone, to the last bit: the batch only stacks cells of one shape and pools the noise in the
order the runs give the cells. Checked on random sweeps of every order and noise mode, with cells
that miss rounds, repeat a round, hold zeros or ties, and lockstep rounds with and without blocks."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from orchestrator.analysis import distributions, intervals, sequential, stats
from orchestrator.analysis.report_model import make_report
from orchestrator.analysis.verdicts import Comparer

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from report_scale import SWEEP_ID, write_suite_sweep  # noqa: E402

ORDERS = ("interleaved", "serial", "randomized", "lockstep")


def blocks(rng: np.random.Generator) -> str:
    walls = np.exp(rng.normal(0.0, 0.05, 4))
    return json.dumps([{"block": c, "cycle": c, "steps": 5, "wall_s": float(w), "warmup": False,
                        "throughput": 5 / float(w)} for c, w in enumerate(walls)])


def sweep_runs(rng: np.random.Generator, order: str, cases: int, rounds: int) -> pd.DataFrame:
    """Ok runs of ``cases`` cases on sides base, a and b; every kind of cell a sweep can hold."""
    rows = []
    for case in range(cases):
        kind = int(rng.integers(8))
        for side in ("base", "a", "b"):
            repeats = list(range(rounds if kind > 2 else int(rng.integers(0, rounds + 1))))
            if kind == 1 and len(repeats) > 1:
                repeats[-1] = repeats[0]  # a round run twice: unpaired
            if kind == 2:
                rng.shuffle(repeats)
            for r in repeats:
                value = float(rng.lognormal(0.0, rng.choice([0.01, 0.1]))) * (1.05 if side == "a" else 1.0)
                if kind == 3:
                    value = float(rng.choice([1.0, 2.0]))  # ties
                if kind == 4 and rng.random() < 0.3:
                    value = float(rng.choice([0.0, np.nan, -1.0]))
                rows.append({"case": f"case{case}", "side": side, "repeat": r, "throughput": value,
                             "blocks": blocks(rng) if order == "lockstep" and kind != 5 else None})
    runs = pd.DataFrame(rows)
    return runs.sample(frac=1.0, random_state=int(rng.integers(1000))) if rng.random() < 0.5 else runs


def alone(comparer: Comparer, case: str, side: str, rounds: int | None, confidence: float
          ) -> stats.Comparison:
    """The comparison of one cell computed by itself, as ``Comparer.compare`` did cell by cell."""
    cand, base, paired = comparer.pair(case, side, "throughput", rounds)
    lockstep = paired and comparer.order == "lockstep"
    interval, method = None, None
    if comparer.noise == "pooled":
        variance, df = pooled(comparer, rounds)[paired]
        method = "pooled-noise " + ("trimmed t of per-round log ratios" if paired
                                    else "two-sample trimmed t of log values")
        if stats.has_log_interval(cand, base) and paired:
            own = intervals.spread(comparer.round_log_ratios(case, side, "throughput", rounds))
            cell = intervals.with_pooled_noise(own, variance, df)
            interval = intervals.LogInterval(cell.center, np.sqrt(cell.term), cell.df)
        elif stats.has_log_interval(cand, base):
            own = (intervals.spread(np.log(values)) for values in (cand, base))
            interval = intervals.difference(*(intervals.with_pooled_noise(s, variance, df) for s in own))
    elif lockstep and stats.has_log_interval(cand, base):
        interval = intervals.paired(comparer.round_log_ratios(case, side, "throughput", rounds))
        method = "trimmed t of per-round block-pair medians (lockstep)"
    return stats.compare(cand, base, paired=paired, confidence=confidence, interval=interval, method=method,
                         ratio_of_interval=lockstep)


def pooled(comparer: Comparer, rounds: int | None) -> dict[bool, tuple[np.ndarray, np.ndarray]]:
    """The pooled noise per kind over every cell, case by case in the order of the runs."""
    spreads: dict[bool, list[intervals.Spread]] = {True: [], False: []}
    runs = comparer.runs
    for case in runs["case"].unique():
        for side in runs.loc[runs["case"] == case, "side"].unique():
            cand, base, paired = comparer.pair(case, side, "throughput", rounds)
            if side == comparer.baseline or not stats.has_log_interval(cand, base):
                continue
            if paired:
                logs = comparer.round_log_ratios(case, side, "throughput", rounds)
                spreads[True].append(intervals.spread(logs))
            else:
                spreads[False] += [intervals.spread(np.log(cand)), intervals.spread(np.log(base))]
    return {kind: intervals.pooled_variance(cells) if cells else (np.nan, np.nan)
            for kind, cells in spreads.items()}


@pytest.mark.parametrize("noise", ["cell", "pooled"])
@pytest.mark.parametrize("order", ORDERS)
def test_every_cell_compared_at_once_is_compared_as_alone(order, noise):
    rng = np.random.default_rng(ORDERS.index(order) + 10 * (noise == "pooled"))
    for rounds in (2, 3, 6, 12):
        comparer = Comparer(sweep_runs(rng, order, 12, rounds), "base", order, noise=noise)
        for case in [f"case{k}" for k in range(12)] + ["absent"]:
            for side in ("a", "b"):
                for limit, confidence in ((None, 0.95), (rounds - 1, 0.8)):
                    batch = comparer.compare(case, side, "throughput", confidence, limit)
                    assert repr(batch) == repr(alone(comparer, case, side, limit, confidence)), (case, side)


def test_rows_compared_together_are_compared_as_one_row_each():
    rng = np.random.default_rng(5)
    for paired, n1, n2 in ((True, 2, 2), (True, 9, 9), (True, 30, 30), (False, 3, 7), (False, 12, 10)):
        cand, base = rng.lognormal(0.0, 0.1, (40, n1)), rng.lognormal(0.0, 0.1, (40, n2))
        cand[3, 0] = 0.0  # a row without an interval among them
        rows = stats.compare_rows(cand, base, paired=paired)
        for i in range(len(cand)):
            one = stats.compare(cand[i], base[i], paired=paired, confidence=0.9)
            assert repr(rows.comparison(i, 0.9)) == repr(one)


class Calls:
    """Counts the calls of a module attribute's function, passing them on."""

    def __init__(self, module: object, name: str, monkeypatch: pytest.MonkeyPatch):
        self.count, function = 0, getattr(module, name)

        def counted(*args, **kwargs):
            self.count += 1
            return function(*args, **kwargs)

        monkeypatch.setattr(module, name, counted)


def test_a_suites_statistics_cost_as_many_array_operations_whatever_its_cases(tmp_path, monkeypatch):
    """A report of twice the benchmarks evaluates t quantiles and interval spreads as often (on
    arrays twice as long): per cell, they made a 10,000-benchmark suite's report take minutes."""
    counts = []
    for cases in (100, 200):
        root = tmp_path / str(cases) / "results"
        write_suite_sweep(root, cases, repeats=3, steps=2)
        quantiles = Calls(distributions.special, "stdtrit", monkeypatch)
        spreads = Calls(intervals, "spread", monkeypatch)
        distributions._scalar_t_quantile.cache_clear()
        sequential._reach_factors.cache_clear()
        make_report(root, SWEEP_ID)
        counts.append((quantiles.count, spreads.count))
        monkeypatch.undo()
    assert counts[0] == counts[1] and counts[0][1] > 0, counts
