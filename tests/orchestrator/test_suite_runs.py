"""The plumbing of many cases from one run: the plan's suite runs, which benchmarks ``cases`` selects,
each case's run key, and the store folding a suite run's cases back under its key (resume) and
setting them aside with it (a fleet's dead host). Real files through the real writer."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from test_results import outcome, planned

from orchestrator.capabilities import SUITE_CASE, case_matches, suite_case_key
from orchestrator.contract import PlannedRun
from orchestrator.errors import SpecError
from orchestrator.plan.expand import ResolvedSweep, adaptive_plan, build_plan
from orchestrator.spec.load import load_spec, side_settings
from orchestrator.store.parquet import supersede_run, write_run
from orchestrator.store.query import run_statuses
from orchestrator.worker.protocols import make_reader
from orchestrator.worker.protocols.suite_cases import case_results, select_cases

GBENCH_JSON = Path(__file__).parent / "data" / "gbench_repetitions.json"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def gbench_reader(tmp_path: Path, patterns: tuple[str, ...]):
    run = PlannedRun(sweep_id="s", run_key="suite-key", order=0, side="base", ref="HEAD", sha="0" * 40,
                     case=SUITE_CASE, algo=None, task=None, sim=None, variant="manager", repeat=0,
                     repo=str(tmp_path), argv_template=("true",), protocol="gbench", suite_cases=patterns,
                     results_root=str(tmp_path / "results"))
    reader = make_reader(run, tmp_path)
    reader.result_path.write_bytes(GBENCH_JSON.read_bytes())
    assert reader.complete() is None, "a suite run reads every benchmark, selects none yet"
    return run, reader


def test_names_match_themselves_before_globs():
    assert case_matches("test_x.py::test[1]", "test_x.py::test[1]"), "a pytest id is not a glob of itself"
    assert case_matches("test_x.py::test1", "test_x.py::test[1]"), "and, as a glob, what it matches"
    assert case_matches("BM_sum/64", "BM_sum/*") and not case_matches("BM_sin_us", "BM_sum*")
    assert suite_case_key("k", "a") == suite_case_key("k", "a") != suite_case_key("k", "b")
    assert len(suite_case_key("k", "a")) == 20


def test_cases_select_benchmarks_in_output_order(tmp_path):
    _, reader = gbench_reader(tmp_path, ("*",))
    assert select_cases(reader, ("*",)) == (["BM_sum/64", "BM_sum/512", "BM_sin_us", "BM_broken"], None)
    assert select_cases(reader, ("BM_sin_us", "BM_sum/*")) == (["BM_sum/64", "BM_sum/512", "BM_sin_us"], None)
    names, problem = select_cases(reader, ("BM_sum/64", "BM_nope*"))
    assert names == [] and problem == ("cases[1] 'BM_nope*': no benchmark of the gbench output matches it; "
                                       "it has 'BM_sum/64', 'BM_sum/512', 'BM_sin_us', 'BM_broken'")


def test_each_selected_benchmark_is_a_run_of_its_own(tmp_path):
    run, reader = gbench_reader(tmp_path, ("BM_sum/*", "BM_broken"))
    whole = case_results(run, reader, outcome())
    by_case = {case_run.case: (case_run, result) for case_run, result in whole.cases}
    assert list(by_case) == ["BM_sum/64", "BM_sum/512", "BM_broken"]
    case_run, result = by_case["BM_sum/512"]
    assert case_run.run_key == suite_case_key("suite-key", "BM_sum/512") and case_run.suite_cases == ()
    assert result.suite_run_key == "suite-key" and result.status == "ok" and len(result.steps) == 3
    assert result.summary["phase_means_ms"]["time_ms"] == pytest.approx(
        sum(s.phases["time_ms"] for s in result.steps) / 3)
    assert by_case["BM_sum/64"][1].summary != result.summary, "each case its own numbers"
    broken = by_case["BM_broken"][1]
    assert (broken.status, broken.error, list(broken.steps)) == (
        "failed", "gbench benchmark 'BM_broken' did not run: fixture file not found", [])
    assert whole.bad_input is None
    unknown = case_results(replace(run, suite_cases=("BM_nope",)), reader, outcome())
    assert unknown.status == "failed" and unknown.cases is None and unknown.bad_input.startswith("cases[0]")


def test_resume_sees_a_suite_run_ok_only_when_every_case_is(tmp_path):
    suite = planned(tmp_path, "suite-key", "s")
    cases = [replace(suite, run_key=suite_case_key("suite-key", c), case=c) for c in ("a", "b")]
    write_run(cases[0], replace(outcome(), suite_run_key="suite-key"))
    write_run(cases[1], replace(outcome("failed"), suite_run_key="suite-key"))
    write_run(planned(tmp_path, "plain", "s"), outcome())
    assert run_statuses(tmp_path / "results", "s") == {"suite-key": "failed", "plain": "ok"}
    write_run(cases[1], replace(outcome(), suite_run_key="suite-key"))  # the re-run replaces its files
    assert run_statuses(tmp_path / "results", "s") == {"suite-key": "ok", "plain": "ok"}
    supersede_run(tmp_path / "results", "s", "suite-key", "h1")
    assert run_statuses(tmp_path / "results", "s") == {"plain": "ok"}, "its cases go aside with it"
    aside = (tmp_path / "results" / "superseded" / "sweep=s")
    assert len(list((aside / "runs").iterdir())) == len(list((aside / "steps").iterdir())) == 2


def test_a_suite_sweep_plans_one_run_per_side_and_round(tmp_path):
    spec = load_spec(EXAMPLES / "pyperf" / "sweep.yaml", ["repeats=2", "max_repeats=4"])
    assert spec.cases == ["*"], "cases: discover"
    resolved = ResolvedSweep(spec=spec, repo=tmp_path, results_root=tmp_path / "results",
                             shas={"old": "1" * 40, "new": "2" * 40},
                             settings={label: side_settings(spec, label) for label in spec.sides})
    runs = build_plan(resolved, "s")
    assert [(r.case, r.side, r.repeat) for r in runs] == [
        (SUITE_CASE, "old", 0), (SUITE_CASE, "new", 0), (SUITE_CASE, "old", 1), (SUITE_CASE, "new", 1)]
    assert all(r.suite_cases == ("*",) and r.protocol == "pyperf" for r in runs)
    later = adaptive_plan(resolved, "s")
    assert [(r.repeat, r.order) for r in later] == [(2, 4), (2, 5), (3, 6), (3, 7)]
    assert len({r.run_key for r in runs + later}) == 8


def test_suite_cases_are_names_or_globs_and_a_gate_case_may_be_one(tmp_path):
    gate = 'gates=[{metric: time_ms, max_ratio: 1.1, case: "BM_t*"}]'
    glob = load_spec(EXAMPLES / "gbench" / "sweep.yaml", [gate])
    assert glob.cases == ["BM_*"] and glob.gates[0].case == "BM_t*"
    with pytest.raises(SpecError, match=r"cases\[0\]"):
        load_spec(EXAMPLES / "gbench" / "sweep.yaml", ["cases=[' padded']"])
    assert load_spec(EXAMPLES / "pyperf" / "sweep.yaml", ["cases=discover"]).cases == ["*"]
    with pytest.raises(SpecError, match="is not one of the sweep's cases"):  # not a suite: names only
        load_spec(EXAMPLES / "time" / "sweep.yaml", [gate.replace("time_ms", "wall_ms")])


@pytest.mark.parametrize(("example", "overrides", "shape"), [
    ("pytest-benchmark", ["order=lockstep"], (16, 2)),  # a suite's benchmarks: more, shorter blocks
    ("pyperf", ["order=lockstep"], (16, 2)),
    ("lockstep", ["lockstep=null"], (8, 5)),  # a bench
    ("lockstep", [], (4, 5)),  # as the sweep names them
    ("pytest-benchmark", ["order=lockstep", "lockstep.blocks=3"], (3, 2)),
])
def test_lockstep_blocks_the_sweep_leaves_out_are_its_bench_kinds(example, overrides, shape):
    lockstep = load_spec(EXAMPLES / example / "sweep.yaml", overrides).lockstep
    assert (lockstep.blocks, lockstep.block_steps) == shape
