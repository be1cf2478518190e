"""Gate verdicts from bootstrap intervals on synthetic per-run values, and how the report shows them."""

from __future__ import annotations

import pandas as pd
import pytest
import yaml
from test_report import GO2, write_go2_runs, write_sweep

from orchestrator.analysis.report_model import make_report
from orchestrator.analysis.verdicts import FAIL, INCONCLUSIVE, PASS, Comparer, gate_verdict
from orchestrator.errors import EXIT_GATE_FAILED, SpecError
from orchestrator.render.markdown import to_markdown
from orchestrator.spec.load import load_spec
from orchestrator.spec.schema import GateSpec

CASE = "sac/fake/none"
BASE = [100.0, 101.0, 99.0, 100.5, 99.5]


def comparer(cand: list[float], base: list[float] = BASE, order: str = "interleaved",
             repeats: list[int] | None = None) -> Comparer:
    """Ok runs of one case: side ``cand`` and baseline ``base``, round i holding value i of each."""
    rows = [{"case": CASE, "side": side, "repeat": (repeats or list(range(len(values))))[i], "throughput": v}
            for side, values in (("cand", cand), ("base", base)) for i, v in enumerate(values)]
    return Comparer(pd.DataFrame(rows), baseline="base", order=order, resamples=2000)


def verdict(cand: list[float], gate: GateSpec, **kwargs):
    return gate_verdict(0, gate, CASE, "cand", comparer(cand, **kwargs))


@pytest.mark.parametrize("cand, gate, expected", [
    ([99.0, 100.0, 98.5, 99.5, 100.5], GateSpec(metric="throughput", min_ratio=0.97), PASS),
    ([90.0, 91.0, 89.0, 90.5, 89.5], GateSpec(metric="throughput", min_ratio=0.97), FAIL),
    ([97.0, 98.0, 96.0, 97.5, 96.5], GateSpec(metric="throughput", min_ratio=0.97), INCONCLUSIVE),
    ([102.0, 103.0, 101.0, 102.5, 101.5], GateSpec(metric="throughput", max_ratio=1.05), PASS),
    ([110.0, 111.0, 109.0, 110.5, 109.5], GateSpec(metric="throughput", max_ratio=1.05), FAIL),
    ([99.0, 100.0, 98.5, 99.5, 100.5], GateSpec(metric="throughput", min_ratio=0.97, max_ratio=0.99),
     INCONCLUSIVE),
    ([90.0, 91.0, 89.0, 90.5, 89.5], GateSpec(metric="throughput", min_ratio=0.97, max_ratio=0.99), FAIL),
])
def test_the_interval_decides(cand, gate, expected):
    result = verdict(cand, gate)
    assert result.verdict == expected
    c = result.comparison
    assert c.has_interval and c.paired and "95% CI [" in result.reason
    bounds = [b for b in (gate.min_ratio, gate.max_ratio) if b is not None]
    if expected == INCONCLUSIVE:
        assert any(c.low <= b <= c.high for b in bounds) and "straddles" in result.reason
    elif expected == PASS:
        assert all(not c.low < b < c.high for b in bounds) and "entirely" in result.reason


def test_a_higher_confidence_widens_the_interval_until_it_straddles():
    cand = [96.0, 97.0, 95.0, 96.5, 95.5]
    loose = verdict(cand, GateSpec(metric="throughput", min_ratio=0.97, confidence=0.5))
    strict = verdict(cand, GateSpec(metric="throughput", min_ratio=0.97, confidence=0.999))
    assert loose.comparison.high - loose.comparison.low < strict.comparison.high - strict.comparison.low
    assert loose.reason.startswith("50% CI [") and strict.reason.startswith("99.9% CI [")


def test_runs_pair_by_round_only_when_every_round_ran_both_sides():
    drifting = [100.0, 110.0, 120.0, 130.0, 140.0]
    slower = [0.95 * v for v in drifting]
    gate = GateSpec(metric="throughput", min_ratio=0.97)
    paired = verdict(slower, gate, base=drifting)
    assert paired.comparison.paired and paired.verdict == FAIL, "pairing sees through the drift"
    for kwargs in ({"order": "serial"}, {"repeats": [0, 1, 2, 3, 3]}):
        unpaired = verdict(slower, gate, base=drifting, **kwargs)
        assert not unpaired.comparison.paired and unpaired.verdict == INCONCLUSIVE
    missing_round = gate_verdict(0, gate, CASE, "cand", comparer(slower[:4], base=drifting))
    assert not missing_round.comparison.paired
    assert verdict(slower, gate, base=drifting, order="randomized").comparison.paired


def test_too_few_runs_is_inconclusive_and_no_runs_fails():
    gate = GateSpec(metric="throughput", min_ratio=0.5)
    one = gate_verdict(0, gate, CASE, "cand", comparer([100.0], base=[100.0]))
    assert one.verdict == INCONCLUSIVE and "at least 2 ok runs per side, has 1 vs 1" in one.reason
    none = gate_verdict(0, GateSpec(metric="physics_ms", max_ratio=1.0), CASE, "cand", comparer([1.0, 2.0]))
    assert none.verdict == FAIL and "no ok runs with physics_ms on side 'cand'" in none.reason


def test_report_shows_interval_p_value_n_and_verdict(tmp_path):
    sweep = "ab-20260101T000000"
    gates = [{"metric": "throughput", "min_ratio": 1.5, "max_ratio": 1.9},
             {"metric": "physics_ms", "max_ratio": 0.4}]
    write_sweep(tmp_path, sweep, [{"case": None, "side": None, **g} for g in gates], [GO2])
    write_go2_runs(tmp_path, sweep)
    report = make_report(tmp_path, sweep)
    assert [g.verdict for g in report.gates] == [INCONCLUSIVE, FAIL]
    assert report.exit_code == EXIT_GATE_FAILED, "a failed gate outranks an inconclusive one"
    md = to_markdown(report)
    assert ("| >= 1.5x and <= 1.9x | 2.000 | **INCONCLUSIVE** | 95% CI [1.636, 2.444] | 0.1 | "
            "3 vs 3 unpaired |") in md
    assert "95% CI [1.636, 2.444] straddles 1.9: more repeats needed to decide" in md
    assert "| 2.000 | 95% CI [1.636, 2.444], p 0.1 |" in md, "the case table shows the interval too"


def test_gate_confidence_must_lie_between_0_and_1(tmp_path):
    sweep = {"name": "x", "sides": {"a": {"ref": "HEAD"}, "b": {"ref": "HEAD"}}, "baseline": "a",
             "cases": [GO2], "gates": [{"metric": "throughput", "min_ratio": 0.9, "confidence": 1.5}]}
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(sweep))
    with pytest.raises(SpecError, match=r"gates\[0\]\.confidence: must lie strictly between 0 and 1"):
        load_spec(path)
    assert load_spec(path, ["gates=[{metric: throughput, min_ratio: 0.9}]"]).gates[0].confidence == 0.95
