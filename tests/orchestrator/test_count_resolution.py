"""Instruction counts read as measurements (``intervals.count_range``): seeded simulations of the
gate a ci sweep puts on them (``max_ratio: 1.02`` at ``1 - ALPHA / 15``, first look after 2 rounds,
O'Brien-Fleming), through ``power.decide``, the rule a report applies (checked against the report's
own ``Comparer`` below).

Counts that move by a fraction of an instruction a call (as measured: 0.4 of 10.2 million) decide
at the first look, which the t interval of 2 rounds, read at 1 - 1e-11, never does. Counts that
vary (relative s.d. from 1e-6 to 1e-3: a benchmark whose work depends on a hash seed or a clock) are
read as samples unless two rounds happen to agree; the error rate with the truth on the bound stays
within the gate's.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from orchestrator.analysis import intervals, power
from orchestrator.analysis.sequential import Looks
from orchestrator.analysis.verdicts import Comparer, Verdict, gate_verdict
from orchestrator.capabilities import INSTRUCTIONS_METRIC, TIME_METRIC
from orchestrator.session.ci_design import ALPHA, DEFAULT_MAX_RATIO, MIN_ROUNDS
from orchestrator.spec.schema import GateSpec, Spending

SWEEPS = 20_000
CASES = 15  # the generated ci suite's benchmarks: the gate's share of the error rate
CONFIDENCE = 1 - ALPHA / CASES
LOOKS = Looks(MIN_ROUNDS, 10, Spending.obrien_fleming)
COUNT = 10_185_555.0  # instructions a call, as measured for a benchmark that grows a set


def gate(metric: str = INSTRUCTIONS_METRIC, bound: float = DEFAULT_MAX_RATIO) -> GateSpec:
    return GateSpec(metric=metric, max_ratio=bound, confidence=CONFIDENCE)


def jittered(rng: np.random.Generator, truth: float) -> tuple[np.ndarray, np.ndarray]:
    """Log counts ``[sweeps, rounds]``: exact but for up to half an instruction a call each way."""
    def side(count: float) -> np.ndarray:
        return np.log(count + rng.uniform(-0.5, 0.5, (SWEEPS, LOOKS.last)))

    return side(COUNT * truth), side(COUNT)


@pytest.mark.parametrize(("truth", "bound", "verdict"), [
    (1.0, DEFAULT_MAX_RATIO, Verdict.PASS),  # unchanged
    (1.05, DEFAULT_MAX_RATIO, Verdict.FAIL),  # 5 % more work
    (1.01, 1.005, Verdict.FAIL),  # a 1 % change against a gate of half that
])
def test_counts_that_agree_decide_at_the_first_look(truth, bound, verdict):
    cand, base = jittered(np.random.default_rng(7), truth)
    counted = power.decide(cand, base, LOOKS, gate(bound=bound))
    assert counted.rate(verdict) == 1.0 and (counted.rounds == MIN_ROUNDS).all()
    sampled = power.decide(cand, base, LOOKS, gate(TIME_METRIC, bound))
    assert (sampled.rounds > MIN_ROUNDS).mean() > 0.9, "read as samples, 2 rounds bound nothing"


@pytest.mark.parametrize("paired", [True, False], ids=["paired", "unpaired"])
@pytest.mark.parametrize("cv", [1e-6, 1e-5, 3e-5, 1e-4, 1e-3])
def test_counts_that_vary_keep_the_error_rate_with_the_truth_on_the_bound(cv, paired):
    rng = np.random.default_rng(int(cv * 1e7) + paired)
    cand, base = power.simulate(rng, SWEEPS, LOOKS.last, cv=cv, true_ratio=DEFAULT_MAX_RATIO, paired=paired)
    cand, base = cand + np.log(COUNT), base + np.log(COUNT)
    counted = power.decide(cand, base, LOOKS, gate(), paired=paired)
    sampled = power.decide(cand, base, LOOKS, gate(TIME_METRIC), paired=paired)
    wrong = [result.verdict != Verdict.INCONCLUSIVE for result in (counted, sampled)]
    assert wrong[1].mean() <= 1 - CONFIDENCE + 3 * np.sqrt((1 - CONFIDENCE) / SWEEPS), "the t rule's own"
    added = (wrong[0] & ~wrong[1]).mean()
    assert added <= 1e-4, f"reading agreeing counts as measurements claimed {added:.5f} more"


def test_the_report_reads_counts_as_the_simulation_does():
    rng = np.random.default_rng(11)
    rows = []
    for case, (truth, jitter) in {"flat": (1.0, 0.4), "slower": (1.05, 0.4), "varies": (1.0, 2e3)}.items():
        for repeat in range(LOOKS.last):
            for side, count in (("base", COUNT), ("head", COUNT * truth)):
                rows.append({"case": case, "side": side, "repeat": repeat,
                             INSTRUCTIONS_METRIC: count + rng.uniform(-jitter, jitter)})
    runs = pd.DataFrame(rows)
    comparer = Comparer(runs, baseline="base", order="lockstep")
    verdicts = {case: gate_verdict(0, gate(), case, "head", comparer, LOOKS) for case in ("flat", "slower")}
    assert verdicts["flat"].verdict == Verdict.PASS and verdicts["slower"].verdict == Verdict.FAIL
    assert verdicts["flat"].looks == verdicts["slower"].looks == 1, "at the first look"
    flat = verdicts["flat"].comparison
    assert flat.method.startswith("counts agreeing within") and flat.se == 0
    assert flat.high - flat.low <= 2.1 * intervals.COUNT_RESOLUTION
    verdicts["varies"] = gate_verdict(0, gate(), "varies", "head", comparer, LOOKS)
    assert not verdicts["varies"].comparison.method.startswith("counts"), "counts 2e-4 apart are samples"
    for case, verdict in verdicts.items():
        cand, base = (np.log(runs.loc[(runs["case"] == case) & (runs["side"] == side), INSTRUCTIONS_METRIC]
                             .to_numpy())[None, :] for side in ("head", "base"))
        decided = power.decide(cand, base, LOOKS, gate())
        assert decided.verdict[0] == verdict.verdict, case
        assert decided.rounds[0] - LOOKS.first + 1 == verdict.looks, case
