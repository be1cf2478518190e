"""The sweep ``shasweep ci`` designs (``session.ci_design``): the order each protocol allows, rounds
sized by the budget, the gates, and the budget too small for one comparison."""

from __future__ import annotations

import pytest

from orchestrator.capabilities import Capability, describe
from orchestrator.errors import InvalidInputError
from orchestrator.plan.ci_commits import CiCommits
from orchestrator.plan.suite_discovery import FoundSuite
from orchestrator.session.ci_design import (
    DEFAULT_MAX_RATIO,
    MAX_ROUNDS,
    MIN_ROUNDS,
    OUTPUTS_S,
    SETUP_S,
    SPENDING,
    design_sweep,
)
from orchestrator.spec.ci_config import CiConfig
from orchestrator.spec.schema import Spending

COMMITS = CiCommits(base_ref="main", head_ref="HEAD", head="b" * 40, merge_base="a" * 40)
PYTEST = FoundSuite("pytest-benchmark", ("bench",), 15)


def design(found=PYTEST, config=None, budget_s=600.0, commits=COMMITS, history=None, repo=None):
    return design_sweep(found, config or CiConfig(), commits, budget_s, repo, history)


def test_a_pytest_suite_runs_its_benchmarks_only_in_rounds_the_budget_holds():
    made = design()
    spec = made.spec
    assert spec.protocol.value == "pytest-benchmark" and spec.cases == ["*"]
    assert spec.command[:7] == ["{python}", "-m", "pytest", "-q", "-p", "no:cacheprovider", "bench"]
    assert "--benchmark-only" in spec.command and "--benchmark-json={result}" in spec.command
    assert {side: s.ref for side, s in spec.sides.items()} == {"base": "a" * 40, "head": "b" * 40}
    assert spec.baseline == "base" and not spec.aa and spec.env == {}, "each round draws its sides' seed"
    assert [(g.metric, g.max_ratio) for g in spec.gates] == [("time_ms", DEFAULT_MAX_RATIO)]
    assert spec.gates[0].confidence == pytest.approx(1 - 0.05 / 15), "15 cases share the error rate"
    rounds = int((600 - SETUP_S - OUTPUTS_S) // made.estimate.seconds)
    assert (spec.repeats, spec.max_repeats) == (2, rounds)
    lockstep = describe("pytest-benchmark").has(Capability.CONTROL_CHANNEL)
    assert spec.order.value == ("lockstep" if lockstep else "interleaved")


def test_a_src_layout_is_first_on_the_pythonpath_unless_the_project_says_otherwise():
    src = FoundSuite("pytest-benchmark", ("bench",), 15, src_layout=True)
    assert design(src).spec.pythonpath == ["src", "."]
    assert design(src, config=CiConfig(pythonpath=("lib",))).spec.pythonpath == ["lib"]
    assert design().spec.pythonpath == ["."]


def test_a_protocol_with_the_control_channel_runs_in_lockstep():
    spec = design(FoundSuite("benchkit", ("bench/a.py", "bench/b.py"), 2)).spec
    assert spec.order.value == "lockstep" and spec.protocol.value == "v1"
    assert spec.cases == ["bench/a.py", "bench/b.py"] and spec.command[:2] == ["{python}", "{case}"]
    assert "{control}" in spec.command and spec.gates[0].metric == "step_ms"


def test_codspeed_markers_need_lockstep():
    marked = FoundSuite("pytest-benchmark", ("bench",), 15, marker_only=("bench/test_m.py",))
    if describe("pytest-benchmark").has(Capability.CONTROL_CHANNEL):
        assert design(marked).spec.order.value == "lockstep"
    else:
        with pytest.raises(InvalidInputError, match=r"bench/test_m\.py: pytest-codspeed's benchmark marker"):
            design(marked)


def test_the_project_gates_the_history_and_an_a_a_comparison():
    config = CiConfig(gates=({"metric": "time_ms", "max_ratio": 1.1, "case": "*poly*"},), args=("-x",))
    same = CiCommits(base_ref="main", head_ref="HEAD", head="a" * 40, merge_base="a" * 40)
    made = design(config=config, commits=same,
                  history=lambda command, instrument: 20.0 if "-x" in command else None)
    assert made.spec.aa and [(g.max_ratio, g.case) for g in made.spec.gates] == [(1.1, "*poly*")]
    rounds = int((600 - SETUP_S - OUTPUTS_S) // 20)
    assert made.estimate.seconds == 20.0 and made.spec.max_repeats == rounds
    assert design(budget_s=10_000.0).spec.max_repeats == MAX_ROUNDS


def test_a_budget_too_small_for_two_rounds_says_the_minimum():
    minimum = design().min_budget_s
    with pytest.raises(
        InvalidInputError,
        match=r"^--budget: 30s is less than the 1m22s one comparison needs here: about 20 s to start, "
        r"2 rounds of ~21\.0 s \(about 15 benchmarks at ~0\.5 s each, 2 sides\) and 20 s to write the "
        r"outputs; give --budget 1m22s or more",
    ):
        design(budget_s=30.0)
    assert design(budget_s=minimum).spec.repeats == 2


def test_a_multi_script_pyperf_suite_runs_through_the_scripts_driver():
    spec = design(FoundSuite("pyperf", ("bm_a.py", "bm_b.py"), 2)).spec
    assert spec.command[:3] == ["{python}", "-m", "orchestrator.suitekit.pyperf_scripts"]
    assert spec.order.value == "interleaved"


def test_the_project_s_instrument_counts_instructions_and_sizes_the_rounds_for_valgrind(tmp_path):
    plain, counted = design(), design(config=CiConfig(instrument="valgrind"))
    assert plain.spec.instrument.value == "none" and "instrument" not in plain.config
    assert counted.spec.instrument.value == "valgrind" and counted.config["instrument"] == "valgrind"
    assert counted.estimate.seconds > plain.estimate.seconds and "under valgrind" in counted.estimate.source
    assert counted.min_budget_s > plain.min_budget_s, "the budget check counts the instrumented processes"
    time_gate, count_gate = counted.config["gates"]
    assert [gate["metric"] for gate in plain.config["gates"]] == ["time_ms"]
    assert count_gate == {**time_gate, "metric": "instructions"}, "the counts gated as the time is"
    chosen = design(config=CiConfig(instrument="valgrind", gates=({"metric": "time_ms", "max_ratio": 1.1},)))
    assert [gate.metric for gate in chosen.spec.gates] == ["time_ms"], "the project's gates are its own"
    asked = []
    design(config=CiConfig(instrument="valgrind"),
           history=lambda command, instrument: asked.append(instrument))
    assert asked == ["none"], "the counted rounds are sized from the suite; the later, timed ones as " \
        "an uninstrumented sweep's"
    # the counts are taken until their gates decide (the first look): the later rounds are timed ones
    assert counted.min_budget_s == SETUP_S + MIN_ROUNDS * counted.estimate.seconds + OUTPUTS_S
    timed_rounds = int((600.0 - counted.min_budget_s) // plain.estimate.seconds)
    assert counted.spec.max_repeats == MIN_ROUNDS + timed_rounds > 2 * MIN_ROUNDS, counted.spec.max_repeats
    assert counted.later is not None and plain.later is None
    bench = design(FoundSuite("benchkit", ("bench/a.py",), 1), config=CiConfig(instrument="valgrind"))
    assert bench.later is None, "a benchkit bench's lockstep rounds count in every round: all alike"
    (tmp_path / "shasweep.yaml").write_text(
        "name: own\nsides: {a: {ref: HEAD}, b: {ref: HEAD}}\nbaseline: a\ncases: [x]\nprotocol: time\n"
        "command: [python, -c, pass]\ninstrument: valgrind\n")
    own = FoundSuite("sweep", ("shasweep.yaml",), 1)
    assert design(own, repo=tmp_path).spec.instrument.value == "valgrind", "a sweep file's own"
    assert design(own, config=CiConfig(instrument="none"), repo=tmp_path).spec.instrument.value == "none"


def test_the_looks_spend_their_error_rate_late_unless_the_project_s_sweep_says_otherwise(tmp_path):
    """A ci sweep's cases stay undecided to the budget's last rounds, where O'Brien-Fleming spends
    most (tests/orchestrator/test_sequential.py measures what that buys)."""
    assert SPENDING == Spending.obrien_fleming
    assert design().spec.spending == SPENDING and design().config["spending"] == "obrien-fleming"
    (tmp_path / "shasweep.yaml").write_text(
        "name: own\nsides: {a: {ref: HEAD}, b: {ref: HEAD}}\nbaseline: a\ncases: [x]\nprotocol: time\n"
        "command: [python, -c, pass]\nspending: pocock\n")
    own = FoundSuite("sweep", ("shasweep.yaml",), 1)
    assert design(own, repo=tmp_path).spec.spending == Spending.pocock, "a sweep file's own"
