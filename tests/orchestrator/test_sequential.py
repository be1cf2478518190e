"""The adaptive sweep's sequential rule keeps its error rate: seeded simulations of 2000 sweeps.

``power.decide`` is the rule a report applies per cell (checked against ``verdicts.gate_verdict`` on
the same data below), run on many simulated sweeps at once: looks after ``repeats`` = 3 rounds and
after every further round up to ``max_repeats`` = 30, under the sweep's boundary (``spending``:
Pocock by default, O'Brien-Fleming, or the even split). Run noise (``power.simulate``): lognormal
per-process offsets, bursts of a neighbour, or heavy tails; paired rounds and unpaired runs.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from orchestrator.analysis import power
from orchestrator.analysis.sequential import Looks
from orchestrator.analysis.verdicts import Comparer, Verdict, gate_verdict
from orchestrator.session.ci_design import ALPHA, DEFAULT_MAX_RATIO, MIN_ROUNDS
from orchestrator.spec.schema import GateSpec, Spending

SWEEPS = 2000
LOOKS = Looks(3, 30)
MIN = GateSpec(metric="throughput", min_ratio=0.97)
WITHIN = GateSpec(metric="throughput", within=0.03)
SLOWER = 1 / 1.1  # throughput of a commit that takes 10 % longer


def sweeps(seed: int, cv: float, truth: float, paired: bool = True, noise: str = "lognormal"):
    return power.simulate(np.random.default_rng(seed), SWEEPS, LOOKS.last, cv=cv, true_ratio=truth,
                          paired=paired, noise=noise)


def wrong(result: power.Decisions) -> float:
    """With the truth on a bound, any PASS or FAIL is wrong."""
    return result.rate(Verdict.PASS) + result.rate(Verdict.FAIL)


@pytest.mark.parametrize("spending", [Spending.pocock, Spending.obrien_fleming, Spending.even])
@pytest.mark.parametrize("paired", [True, False], ids=["paired", "unpaired"])
@pytest.mark.parametrize("cv", [0.01, 0.03])
def test_with_the_truth_on_the_bound_at_most_5_percent_of_sweeps_claim_anything(spending, paired, cv):
    cand, base = sweeps(int(cv * 100) + paired, cv, 0.97, paired)
    result = power.decide(cand, base, Looks(3, 30, spending), MIN, paired=paired)
    assert wrong(result) <= 0.05


@pytest.mark.parametrize("paired", [True, False], ids=["paired", "unpaired"])
@pytest.mark.parametrize("truth", [0.97, 1.03])
def test_a_within_gate_claims_at_most_5_percent_with_the_truth_on_either_bound(paired, truth):
    cand, base = sweeps(40 + paired, 0.015, truth, paired)
    result = power.decide(cand, base, LOOKS, WITHIN, paired=paired)
    assert wrong(result) <= 0.05
    assert result.rate(Verdict.PASS) > result.rate(Verdict.FAIL), "its PASS spends 3/4 of the error rate"


@pytest.mark.slow
@pytest.mark.parametrize("noise", power.NOISES)
@pytest.mark.parametrize("paired", [True, False], ids=["paired", "unpaired"])
@pytest.mark.parametrize("cv", [0.015, 0.03])
def test_every_noise_model_keeps_wrong_claims_at_most_5_percent(noise, paired, cv):
    """Offsets, bursts and heavy tails; a bound gate with the truth on its bound, a within gate
    with the truth on each of its bounds."""
    for index, (gate, truth) in enumerate([(MIN, 0.97), (WITHIN, 0.97), (WITHIN, 1.03)]):
        cand, base = sweeps(100 * index + int(cv * 1000) + paired, cv, truth, paired, noise)
        assert wrong(power.decide(cand, base, LOOKS, gate, paired=paired)) <= 0.05, (gate, truth)


def test_looking_every_round_at_a_plain_95_percent_interval_would_claim_far_more():
    cand, base = sweeps(9, 0.015, 0.97)
    naive = [power.decide(cand[:, :n], base[:, :n], Looks(n, n), MIN) for n in range(3, 31)]
    claimed = np.any([d.verdict != Verdict.INCONCLUSIVE for d in naive], axis=0)
    assert claimed.mean() > 0.15, "why the looks spend the error rate"


@pytest.mark.parametrize("paired", [True, False], ids=["paired", "unpaired"])
def test_a_true_5_percent_slowdown_at_cv_1_5_percent_fails_a_097_gate(paired):
    cand, base = sweeps(21 + paired, 0.015, 0.95, paired)
    result = power.decide(cand, base, LOOKS, MIN, paired=paired)
    assert result.rate(Verdict.FAIL) >= 0.90 and result.rate(Verdict.PASS) == 0


@pytest.mark.parametrize("paired", [True, False], ids=["paired", "unpaired"])
def test_an_aa_sweep_at_cv_1_5_percent_passes_a_097_gate(paired):
    cand, base = sweeps(31 + paired, 0.015, 1.0, paired)
    result = power.decide(cand, base, LOOKS, MIN, paired=paired)
    assert result.rate(Verdict.PASS) >= 0.90 and result.rate(Verdict.FAIL) == 0
    assert result.rounds.mean() < LOOKS.last, "a clear case stops early"


@pytest.mark.parametrize("paired", [True, False], ids=["paired", "unpaired"])
@pytest.mark.parametrize("cv, truth, fewer", [(0.015, SLOWER, 0.04), (0.03, SLOWER, 0.10),
                                              (0.015, 1.0, 0.12), (0.03, 1.0, 0.12)])
def test_the_default_boundary_decides_in_fewer_rounds_than_the_even_split(paired, cv, truth, fewer):
    """Same sweeps, both designs: the boundary computed for the looks' correlation decides in fewer
    rounds on average (measured 5-16 % fewer here; docs/performance.md, "Verdict power"), at least as
    often and never the wrong way. A 10 % slowdown at CV 1.5 % is decided after 3.6-5.4 rounds by
    either: the first looks' few degrees of freedom, not the spending, hold it back."""
    cand, base = sweeps(51 + paired, cv, truth, paired)
    new = power.decide(cand, base, LOOKS, MIN, paired=paired)
    old = power.decide(cand, base, Looks(3, 30, Spending.even), MIN, paired=paired)
    right, wrong_way = (Verdict.FAIL, Verdict.PASS) if truth < 0.97 else (Verdict.PASS, Verdict.FAIL)
    assert new.rounds.mean() <= (1 - fewer) * old.rounds.mean()
    assert new.rate(right) >= old.rate(right) >= 0.6 and new.rate(wrong_way) <= 0.002


@pytest.mark.parametrize("paired", [True, False], ids=["paired", "unpaired"])
@pytest.mark.parametrize("cv", [0.015, 0.03])
def test_an_aa_sweep_passes_a_within_gate_more_often_than_the_same_bounds_read_from_one_interval(paired, cv):
    """A within gate's PASS reads a narrower interval than its FAIL (equivalence: two one-sided
    tests), so an A/A sweep PASSes it more often and sooner than ``min_ratio: 0.97, max_ratio:
    1.03``. It must clear both bounds: where the rounds give the power (CV 1.5 %) it PASSes as
    often as ``min_ratio: 0.97`` alone, at CV 3 % less often (docs/design.md, "Statistics")."""
    cand, base = sweeps(61 + paired, cv, 1.0, paired)
    within = power.decide(cand, base, LOOKS, WITHIN, paired=paired)
    both = power.decide(cand, base, LOOKS, GateSpec(metric="throughput", min_ratio=0.97, max_ratio=1.03),
                        paired=paired)
    one = power.decide(cand, base, LOOKS, MIN, paired=paired)
    assert within.rounds.mean() < both.rounds.mean() and within.rate(Verdict.FAIL) <= 0.002
    if cv == 0.015:
        assert within.rate(Verdict.PASS) == both.rate(Verdict.PASS) == one.rate(Verdict.PASS) == 1.0
    else:
        assert both.rate(Verdict.PASS) < within.rate(Verdict.PASS) < one.rate(Verdict.PASS)


@pytest.mark.parametrize("gate", [MIN, WITHIN], ids=["min_ratio", "within"])
@pytest.mark.parametrize("spending", [Spending.pocock, Spending.even])
def test_the_simulated_rule_is_the_one_reports_apply(gate, spending):
    looks = Looks(3, 30, spending)
    cand, base = power.simulate(np.random.default_rng(4), 12, looks.last, cv=0.02, true_ratio=0.975)
    expected = power.decide(cand, base, looks, gate)
    for sweep in range(12):
        rows = [{"case": "a/b/c", "side": side, "repeat": r, "throughput": float(np.exp(values[sweep, r]))}
                for side, values in (("new", cand), ("old", base)) for r in range(looks.last)]
        comparer = Comparer(pd.DataFrame(rows), "old", "interleaved")
        verdict = gate_verdict(0, gate, "a/b/c", "new", comparer, looks)
        assert verdict.verdict == Verdict(expected.verdict[sweep])
        if verdict.verdict != Verdict.INCONCLUSIVE:
            assert looks.first + verdict.looks - 1 == expected.rounds[sweep]


@pytest.mark.parametrize("noise", power.NOISES)
@pytest.mark.parametrize("cv", [0.02, 0.03])
def test_a_sweep_that_runs_to_its_budget_fails_a_small_slowdown_more_often_under_obrien_fleming(noise, cv):
    """A ci sweep (``session.ci_design``): 27 looks from round 2, one of 15 cases' gates (``max_ratio:
    1.02`` at ``1 - 0.05 / 15``). Most of its cases stay undecided to the last rounds, where
    O'Brien-Fleming's band is narrow (z 3.16 against Pocock's 3.60): a time 5 % longer FAILs in
    2-17 points more sweeps (0.30-0.99 against 0.18-0.97 here, by noise and CV), an unchanged
    one PASSes more often, and with the truth on the bound neither claims more than the gate's
    error rate (measured at most 0.0030 of 0.0033)."""
    looks = {s: Looks(MIN_ROUNDS, 27, s) for s in (Spending.pocock, Spending.obrien_fleming)}
    gate = GateSpec(metric="time_ms", max_ratio=DEFAULT_MAX_RATIO, confidence=1 - ALPHA / 15)

    def decided(truth: float, seed: int) -> dict[Spending, power.Decisions]:
        cand, base = power.simulate(np.random.default_rng(seed), SWEEPS, 27, cv=cv, true_ratio=truth,
                                    noise=noise)
        return {s: power.decide(cand, base, looks[s], gate) for s in looks}

    slower, unchanged, on_bound = decided(1.05, 1), decided(1.0, 2), decided(DEFAULT_MAX_RATIO, 3)
    late, even_ish = slower[Spending.obrien_fleming], slower[Spending.pocock]
    assert late.rate(Verdict.FAIL) >= even_ish.rate(Verdict.FAIL) + 0.015, "the same sweeps, both bands"
    assert late.rate(Verdict.PASS) == even_ish.rate(Verdict.PASS) == 0
    passed = {s: d.rate(Verdict.PASS) for s, d in unchanged.items()}
    assert passed[Spending.obrien_fleming] > passed[Spending.pocock]
    assert all(d.rate(Verdict.FAIL) == 0 for d in unchanged.values())
    assert all(wrong(d) <= ALPHA / 15 * 1.5 for d in on_bound.values()), "2000 sweeps: 1.5x for chance"


@pytest.mark.parametrize("noise", power.NOISES)
@pytest.mark.parametrize("closing", [15, 21])
def test_a_sweep_its_budget_ends_early_spends_the_rest_of_its_error_rate_at_its_last_look(noise, closing):
    """A ci sweep planned for 26 rounds that its time budget ends after ``closing`` (``Looks.closing``):
    its last look reads the error rate the looks before it left (O'Brien-Fleming had spent a third of
    it by round 21), so a time 5 % longer FAILs in more of the same sweeps (measured: 3-6 points more
    at CV 2 %), and with the truth on the bound it claims no more than the gate's error rate."""
    gate = GateSpec(metric="time_ms", max_ratio=DEFAULT_MAX_RATIO, confidence=1 - ALPHA / 15)
    planned = Looks(MIN_ROUNDS, 26, Spending.obrien_fleming)
    closed = Looks(MIN_ROUNDS, 26, Spending.obrien_fleming, closing)
    cand, base = power.simulate(np.random.default_rng(closing), SWEEPS, 26, cv=0.02, true_ratio=1.05,
                                noise=noise)
    full, spent = power.decide(cand, base, planned, gate), power.decide(cand, base, closed, gate)
    cut = np.mean((full.verdict == Verdict.FAIL) & (full.rounds <= closing))  # the planned looks, cut there
    assert spent.rounds.max() <= closing and spent.rate(Verdict.PASS) == 0
    assert spent.rate(Verdict.FAIL) >= cut + 0.02
    cand, base = power.simulate(np.random.default_rng(closing + 1), 4 * SWEEPS, closing, cv=0.02,
                                true_ratio=DEFAULT_MAX_RATIO, noise=noise)
    assert wrong(power.decide(cand, base, closed, gate)) <= ALPHA / 15 * 1.5, "8000 sweeps: 1.5x for chance"


def test_looks_close_only_between_the_first_and_the_planned_last():
    assert Looks(3, 30, closing=30).closing is None and Looks(3, 30, closing=2).closing is None
    assert Looks(3, 30, closing=12).final == 12 and Looks(3, 30, closing=12).planned() == Looks(3, 30)
    assert Looks(3, 30, closing=12).schedule(20) == list(range(3, 13))


def test_a_report_reads_the_last_look_of_a_sweep_its_budget_ended_at_the_rest_of_the_error_rate(tmp_path):
    """The same runs, 6 rounds of 12 planned: recorded as ended by the time budget, the gate's last
    look reads the closed level and says so; recorded as stopped otherwise, the planned level."""
    from suite_sweeps import SuiteSweep

    from orchestrator.analysis.report_model import make_report
    from orchestrator.spec.record import OUT_OF_TIME

    rng = np.random.default_rng(4)
    noise = {(c, s, r): float(np.exp(rng.normal(0, 0.05))) for c in ("a", "b") for s in ("old", "new")
             for r in range(6)}
    reports = {}
    for ended in (OUT_OF_TIME, None):
        sweep_id = f"closing-2026010{1 if ended else 2}T000000"
        root = tmp_path / str(bool(ended))
        SuiteSweep(sweep_id, {"old": ["a", "b"], "new": ["a", "b"]}, lambda c, s, r: noise[c, s, r], rounds=6,
                   spec={"repeats": 2, "max_repeats": 12, "spending": "obrien-fleming"},
                   adaptive={"repeats": 2, "max_repeats": 12, "rounds": 6, "ended": ended}).write(root)
        reports[ended] = make_report(root, sweep_id)
    for ended, looks in ((OUT_OF_TIME, Looks(2, 12, Spending.obrien_fleming, 6)),
                         (None, Looks(2, 12, Spending.obrien_fleming))):
        gate = next(g for g in reports[ended].gates if g.case == "a")
        assert gate.looks == 5 and gate.comparison.confidence == pytest.approx(looks.confidence_at(6, 0.95))
        assert ("time budget closed its looks" in gate.reason) == (ended is not None), gate.reason
    closed, cut = (next(g for g in reports[e].gates if g.case == "a").comparison for e in (OUT_OF_TIME, None))
    assert closed.high - closed.low < cut.high - cut.low
