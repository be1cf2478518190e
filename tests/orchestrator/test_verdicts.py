"""Gate verdicts from log-scale t-intervals on synthetic per-run values, and how the report shows them."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy import stats as sps
from test_report import GO2, write_go2_runs, write_sweep

from orchestrator.analysis.report_model import make_report
from orchestrator.analysis.sequential import Looks
from orchestrator.analysis.verdicts import (
    Comparer,
    Verdict,
    format_detectable,
    format_interval,
    format_n,
    format_p,
    gate_verdict,
    gates_exit_code,
)
from orchestrator.errors import EXIT_GATE_FAILED, EXIT_RUN_FAILED, SpecError
from orchestrator.render.markdown import md_text, report_markdown
from orchestrator.spec.load import load_spec
from orchestrator.spec.schema import GateSpec, Spending

CASE = "sac/fake/none"
BASE = [100.0, 101.0, 99.0, 100.5, 99.5]


def comparer(cand: list[float], base: list[float] = BASE, order: str = "interleaved",
             repeats: list[int] | None = None) -> Comparer:
    """Ok runs of one case: side ``cand`` and baseline ``base``, round i holding value i of each."""
    rows = [{"case": CASE, "side": side, "repeat": (repeats or list(range(len(values))))[i], "throughput": v}
            for side, values in (("cand", cand), ("base", base)) for i, v in enumerate(values)]
    return Comparer(pd.DataFrame(rows), baseline="base", order=order)


def verdict(cand: list[float], gate: GateSpec, **kwargs):
    return gate_verdict(0, gate, CASE, "cand", comparer(cand, **kwargs))


@pytest.mark.parametrize("cand, gate, expected", [
    ([99.0, 100.0, 98.5, 99.5, 100.5], GateSpec(metric="throughput", min_ratio=0.97), Verdict.PASS),
    ([90.0, 91.0, 89.0, 90.5, 89.5], GateSpec(metric="throughput", min_ratio=0.97), Verdict.FAIL),
    ([97.3, 98.4, 95.8, 97.2, 96.9], GateSpec(metric="throughput", min_ratio=0.97), Verdict.INCONCLUSIVE),
    ([102.0, 103.0, 101.0, 102.5, 101.5], GateSpec(metric="throughput", max_ratio=1.05), Verdict.PASS),
    ([110.0, 111.0, 109.0, 110.5, 109.5], GateSpec(metric="throughput", max_ratio=1.05), Verdict.FAIL),
    ([99.0, 100.0, 98.5, 99.5, 100.5], GateSpec(metric="throughput", min_ratio=0.97, max_ratio=0.99),
     Verdict.INCONCLUSIVE),
    ([90.0, 91.0, 89.0, 90.5, 89.5], GateSpec(metric="throughput", min_ratio=0.97, max_ratio=0.99),
     Verdict.FAIL),
])
def test_the_interval_decides(cand, gate, expected):
    result = verdict(cand, gate)
    assert result.verdict == expected
    c = result.comparison
    assert c.has_interval and c.paired and "95% CI [" in result.reason
    bounds = [b for b in (gate.min_ratio, gate.max_ratio) if b is not None]
    if expected == Verdict.INCONCLUSIVE:
        assert any(c.low <= b <= c.high for b in bounds) and "straddles" in result.reason
    elif expected == Verdict.PASS:
        assert all(not c.low < b < c.high for b in bounds) and "entirely" in result.reason


def test_a_higher_confidence_widens_the_interval_until_it_straddles():
    cand = [96.0, 97.0, 95.0, 96.5, 95.5]
    loose = verdict(cand, GateSpec(metric="throughput", min_ratio=0.97, confidence=0.5))
    strict = verdict(cand, GateSpec(metric="throughput", min_ratio=0.97, confidence=0.999))
    assert loose.comparison.high - loose.comparison.low < strict.comparison.high - strict.comparison.low
    assert loose.reason.startswith("50% CI [") and strict.reason.startswith("99.9% CI [")


def test_runs_pair_by_round_when_each_side_ran_each_round_at_most_once():
    drifting = [100.0, 110.0, 120.0, 130.0, 140.0]
    slower = [0.95 * v * e for v, e in zip(drifting, [1.004, 0.993, 1.011, 0.998, 0.990], strict=True)]
    gate = GateSpec(metric="throughput", min_ratio=0.97)
    paired = verdict(slower, gate, base=drifting)
    assert paired.comparison.paired and paired.verdict == Verdict.FAIL, "pairing sees through the drift"
    for kwargs in ({"order": "serial"}, {"repeats": [0, 1, 2, 3, 3]}):
        unpaired = verdict(slower, gate, base=drifting, **kwargs)
        assert not unpaired.comparison.paired and unpaired.verdict == Verdict.INCONCLUSIVE
    missing_round = gate_verdict(0, gate, CASE, "cand", comparer(slower[:4], base=drifting))
    assert missing_round.comparison.paired and format_n(missing_round.comparison) == "4 vs 4 paired", (
        "the rounds both sides ran pair; the baseline's extra round is left out")
    assert verdict(slower, gate, base=drifting, order="randomized").comparison.paired


def test_every_verdict_says_what_it_could_detect():
    gate = GateSpec(metric="throughput", min_ratio=0.97)
    close = verdict([98.1, 97.2, 96.9, 98.6, 96.4], gate)
    c = close.comparison
    assert close.verdict == Verdict.INCONCLUSIVE
    assert close.rounds_needed is not None and close.rounds_needed > 5
    t = sps.t.ppf(0.975, c.df) + sps.t.ppf(0.8, c.df)
    assert close.mde == pytest.approx(math.expm1(t * c.se))
    assert format_detectable(close).startswith(f"MDE {100 * close.mde:.1f}%, ~{close.rounds_needed} rounds")
    clear = verdict([90.0, 91.0, 89.0, 90.5, 89.5], gate)
    assert clear.verdict == Verdict.FAIL and clear.rounds_needed is None and clear.mde is not None


def test_an_undetectable_change_is_infinite_not_an_error():
    """Two rounds (df 1) read at a late look's confidence: the MDE overflows a float; it is reported
    as infinite and the gate still gets its verdict."""
    gate = GateSpec(metric="throughput", min_ratio=0.999, max_ratio=1.001, confidence=0.99999)
    result = verdict([93.0, 101.0], gate, base=[100.0, 99.0])
    assert result.verdict == Verdict.INCONCLUSIVE and result.comparison.df == 1
    assert result.mde == math.inf and format_detectable(result).startswith("MDE inf%")


def test_an_adaptive_verdict_is_its_first_deciding_look_at_a_spent_confidence():
    rng = np.random.default_rng(2)
    base = list(100 * np.exp(rng.normal(0, 0.01, 12)))
    cand = [0.9 * b * float(np.exp(rng.normal(0, 0.01))) for b in base]
    for looks in (Looks(3, 12), Looks(3, 12, Spending.even)):
        result = gate_verdict(0, GateSpec(metric="throughput", min_ratio=0.97), CASE, "cand",
                              comparer(cand, base=base), looks)
        assert result.verdict == Verdict.FAIL and result.looks >= 1 and "look " in result.reason
        assert result.comparison.confidence == pytest.approx(looks.confidence_at(2 + result.looks, 0.95))
    even = Looks(3, 12, Spending.even)
    assert even.confidence_at(3, 0.95) == pytest.approx(1 - 0.05 * 3 / 12)
    assert even.confidence_at(4, 0.95) == pytest.approx(1 - 0.05 / 12)
    assert sum(1 - even.confidence_at(n, 0.95) for n in range(3, 13)) == pytest.approx(0.05)
    pocock = [1 - Looks(3, 12).confidence_at(n, 0.95) for n in range(3, 13)]
    assert sum(pocock) > 0.05 and all(p > 0.05 / 12 for p in pocock[1:]), (
        "the looks' correlation lets each read more than an even share")
    assert Looks(3, 3).confidence_at(3, 0.95) == 0.95 and not Looks(3, 3).adaptive


def test_too_few_runs_is_inconclusive_and_no_runs_is_no_data():
    gate = GateSpec(metric="throughput", min_ratio=0.5)
    one = gate_verdict(0, gate, CASE, "cand", comparer([100.0], base=[100.0]))
    assert one.verdict == Verdict.INCONCLUSIVE and "at least 2 ok runs per side, has 1 vs 1" in one.reason
    none = gate_verdict(0, GateSpec(metric="physics_ms", max_ratio=1.0), CASE, "cand", comparer([1.0, 2.0]))
    assert none.verdict == Verdict.NO_DATA and "no ok runs with physics_ms on side 'cand'" in none.reason
    assert none.empty_sides == ("cand", "base") and gates_exit_code([none, one]) == EXIT_RUN_FAILED


def test_report_shows_interval_p_value_n_detectable_and_verdict(tmp_path):
    sweep = "ab-20260101T000000"
    gates = [{"metric": "throughput", "min_ratio": 1.5, "max_ratio": 1.9},
             {"metric": "physics_ms", "max_ratio": 0.4}]
    write_sweep(tmp_path, sweep, [{"case": None, "side": None, **g} for g in gates], [GO2])
    write_go2_runs(tmp_path, sweep)
    report = make_report(tmp_path, sweep)
    assert [g.verdict for g in report.gates] == [Verdict.INCONCLUSIVE, Verdict.FAIL]
    assert report.exit_code == EXIT_GATE_FAILED, "a failed gate outranks an inconclusive one"
    c = report.gates[0].comparison
    cand, base = np.log([200.0, 220.0, 180.0]), np.log([100.0, 110.0, 90.0])
    expected = sps.ttest_ind(cand, base).confidence_interval()
    assert (c.low, c.high) == pytest.approx((math.exp(expected.low), math.exp(expected.high)))
    md = report_markdown(report)
    interval = format_interval(c)
    assert (f"| >= 1.5x and <= 1.9x | 2.000 | **INCONCLUSIVE** | {interval} | {format_p(c)} | "
            f"3 vs 3 unpaired | {md_text(format_detectable(report.gates[0]))} |") in md
    assert f"{interval} straddles 1.9" in md
    assert f"| 2.000 | {interval}, p {format_p(c)} |" in md, "the case table shows the interval too"


def test_gate_confidence_must_lie_between_0_and_1(tmp_path):
    sweep = {"name": "x", "sides": {"a": {"ref": "HEAD"}, "b": {"ref": "HEAD"}}, "baseline": "a",
             "cases": [GO2], "gates": [{"metric": "throughput", "min_ratio": 0.9, "confidence": 1.5}]}
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(sweep))
    with pytest.raises(SpecError, match=r"gates\[0\]\.confidence: must lie strictly between 0 and 1"):
        load_spec(path)
    assert load_spec(path, ["gates=[{metric: throughput, min_ratio: 0.9}]"]).gates[0].confidence == 0.95
