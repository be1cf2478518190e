"""The adaptive sweep's sequential rule keeps its error rate: seeded simulations of 2000 sweeps.

``power.decide`` is the rule a report applies per cell (checked against ``verdicts.gate_verdict`` on
the same data below), run on many simulated sweeps at once: looks after ``repeats`` = 3 rounds and
after every further round up to ``max_repeats`` = 30, per-run lognormal noise.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from orchestrator.analysis import power
from orchestrator.analysis.sequential import Looks
from orchestrator.analysis.verdicts import Comparer, Verdict, gate_verdict
from orchestrator.spec.schema import GateSpec

SWEEPS = 2000
LOOKS = Looks(3, 30)


@pytest.mark.parametrize("paired", [True, False], ids=["paired", "unpaired"])
@pytest.mark.parametrize("cv", [0.01, 0.03])
def test_with_the_truth_on_the_bound_at_most_5_percent_of_sweeps_claim_anything(paired, cv):
    cand, base = power.simulate(np.random.default_rng(int(cv * 100) + paired), SWEEPS, LOOKS.last, cv=cv,
                                true_ratio=0.97, paired=paired)
    result = power.decide(cand, base, LOOKS, min_ratio=0.97, paired=paired)
    assert result.rate(Verdict.PASS) + result.rate(Verdict.FAIL) <= 0.05


def test_looking_every_round_at_a_plain_95_percent_interval_would_claim_far_more():
    cand, base = power.simulate(np.random.default_rng(9), SWEEPS, LOOKS.last, cv=0.015, true_ratio=0.97)
    naive = [power.decide(cand[:, :n], base[:, :n], Looks(n, n), min_ratio=0.97) for n in range(3, 31)]
    claimed = np.any([d.verdict != Verdict.INCONCLUSIVE for d in naive], axis=0)
    assert claimed.mean() > 0.15, "why the looks spend the error rate"


@pytest.mark.parametrize("paired", [True, False], ids=["paired", "unpaired"])
def test_a_true_5_percent_slowdown_at_cv_1_5_percent_fails_a_097_gate(paired):
    cand, base = power.simulate(np.random.default_rng(21 + paired), SWEEPS, LOOKS.last, cv=0.015,
                                true_ratio=0.95, paired=paired)
    result = power.decide(cand, base, LOOKS, min_ratio=0.97, paired=paired)
    assert result.rate(Verdict.FAIL) >= 0.90 and result.rate(Verdict.PASS) == 0


@pytest.mark.parametrize("paired", [True, False], ids=["paired", "unpaired"])
def test_an_aa_sweep_at_cv_1_5_percent_passes_a_097_gate(paired):
    cand, base = power.simulate(np.random.default_rng(31 + paired), SWEEPS, LOOKS.last, cv=0.015,
                                true_ratio=1.0, paired=paired)
    result = power.decide(cand, base, LOOKS, min_ratio=0.97, paired=paired)
    assert result.rate(Verdict.PASS) >= 0.90 and result.rate(Verdict.FAIL) == 0
    assert result.rounds.mean() < LOOKS.last, "a clear case stops early"


def test_the_simulated_rule_is_the_one_reports_apply():
    cand, base = power.simulate(np.random.default_rng(4), 12, LOOKS.last, cv=0.02, true_ratio=0.975)
    expected = power.decide(cand, base, LOOKS, min_ratio=0.97)
    gate = GateSpec(metric="throughput", min_ratio=0.97)
    for sweep in range(12):
        rows = [{"case": "a/b/c", "side": side, "repeat": r, "throughput": float(np.exp(values[sweep, r]))}
                for side, values in (("new", cand), ("old", base)) for r in range(LOOKS.last)]
        comparer = Comparer(pd.DataFrame(rows), "old", "interleaved")
        verdict = gate_verdict(0, gate, "a/b/c", "new", comparer, LOOKS)
        assert verdict.verdict == Verdict(expected.verdict[sweep])
        if verdict.verdict != Verdict.INCONCLUSIVE:
            assert LOOKS.first + verdict.looks - 1 == expected.rounds[sweep]
