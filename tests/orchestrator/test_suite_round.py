"""A pytest-benchmark suite's lockstep round on the worker (``worker.round_task`` with
``worker.suite_round``): real pytest processes through the plugin, real worktrees and Parquet files.
Each benchmark is a case of its own, played block by block by the sides that have it; a benchmark
that fails ends the round naming it and its side; an unsupported fixture attribute falls back or
stops, as ``lockstep.fallback`` says."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest
from fakebench import suite_repo
from fakebench.fakerepo import FakeRepo
from fakebench.suite_repo import BASE_SUITE, make_suite_repo, suite_round

from orchestrator.dispatch.adaptive import counting_s, narrowed
from orchestrator.store.query import read_runs
from orchestrator.worker.cleanup import processes_with_run_key
from orchestrator.worker.lockstep_round import BlockPlan
from orchestrator.worker.round_task import execute_round
from orchestrator.worker.suite_round import CALLS_FILE, Calibrated, case_plan

pytestmark = pytest.mark.slow

SPIN = ["test_bench.py::test_spin[2000]", "test_bench.py::test_spin[3000]"]
REMOVED, ADDED = "test_bench.py::test_removed", "test_bench.py::test_added"
needs_valgrind = pytest.mark.skipif(shutil.which("valgrind") is None,
                                    reason="valgrind (Debian package valgrind) is not installed")


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("SHASWEEP_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("SHASWEEP_LOCK", raising=False)
    monkeypatch.delenv("SHASWEEP_BENCH_CPUS", raising=False)


def case_rows(results: Path) -> pd.DataFrame:
    """Every run row, read as the store reads them (a failed case's file lacks the metric columns: a
    plain read of the directory takes its schema from whichever file sorts first)."""
    return read_runs(results).sort_values(["case", "side"]).reset_index(drop=True)


def test_each_benchmark_is_a_lockstep_case_played_by_the_sides_that_have_it(tmp_path):
    candidate = BASE_SUITE.replace("def test_removed(benchmark):", "def test_added(benchmark):")
    repo = make_suite_repo(tmp_path, candidate)
    outcomes = execute_round(suite_round(repo, tmp_path / "results"))
    assert [o.status for o in outcomes] == ["ok", "ok"], [o.error for o in outcomes]
    assert [o.cases for o in outcomes] == [3, 3]
    rows = case_rows(tmp_path / "results")
    assert list(zip(rows["case"], rows["side"], strict=True)) == [
        (ADDED, "cand"), (REMOVED, "base"), (SPIN[0], "base"), (SPIN[0], "cand"), (SPIN[1], "base"),
        (SPIN[1], "cand")], "a case one side lacks has rows on the other side only"
    assert set(rows["status"]) == {"ok"} and set(rows["ran_in"]) == {"lockstep"} and rows["audited"].all()
    assert rows["lock_wait_s"].ge(0).all(), "each case's row says how long its round waited for the host"
    assert (rows["steps"] == 6).all() and rows["time_ms"].gt(0).all()
    assert rows["cpu_ms"].gt(0).all() and rows["thread_cpu_ms"].gt(0).all(), "CPU time per call, per case"
    calls = json.loads(next((tmp_path / "home" / "logs").glob("*/suite-calls.json")).read_text())
    spans = []
    for row in rows.itertuples():
        blocks = json.loads(row.blocks)
        measured = [b for b in blocks if not b["warmup"]]
        assert [b["cycle"] for b in measured] == [0, 1, 2]
        assert {b["calls"] for b in blocks} == {calls[row.case]["calls"]}, "the same calls on every side"
        assert row.time_ms == pytest.approx(sum(b["phases"]["time_ms"] for b in measured) / 3)
        assert row.cpu_ms == pytest.approx(sum(b["phases"]["cpu_ms"] for b in measured) / 3), \
            "each block carries its CPU time per call, as block_pairs reads it"
        spans += [(b["started"], b["ended"]) for b in blocks]
    spans.sort()
    assert all(later[0] >= earlier[1] for earlier, later in zip(spans, spans[1:], strict=False)), \
        "one process at a time, block by block"
    assert len(set(rows["suite_run_key"])) == 2 and rows["log_dir"].nunique() == 2


def test_an_adaptive_round_plays_only_the_cases_it_names(tmp_path):
    repo = make_suite_repo(tmp_path, BASE_SUITE)
    runs = [replace(run, suite_only=(SPIN[1],)) for run in suite_round(repo, tmp_path / "results", repeat=3)]
    outcomes = execute_round(runs)
    assert [o.status for o in outcomes] == ["ok", "ok"], [o.error for o in outcomes]
    rows = case_rows(tmp_path / "results")
    assert list(zip(rows["case"], rows["side"], strict=True)) == [(SPIN[1], "base"), (SPIN[1], "cand")]
    for run in runs:  # the other benchmarks were deselected: pytest never ran them
        log = (Path(rows.loc[rows["side"] == run.side, "log_dir"].iloc[0]) / "stdout.log").read_text()
        assert "2 deselected" in log, log


def test_a_benchmark_whose_one_call_outlasts_a_block_plays_blocks_of_one_step(tmp_path, monkeypatch):
    """lockstep.step_ms 2, block_steps 2: a benchmark of a 30 ms call plays 3 blocks of 1 step on each
    side (each after its warm-up step), the others blocks of 2 steps of about 2 ms."""
    slow = BASE_SUITE + "\n\ndef test_slow(benchmark):\n    import time\n    benchmark(time.sleep, 0.03)\n"
    monkeypatch.setattr(suite_repo, "BASE_SUITE", slow)  # both commits have it
    repo = make_suite_repo(tmp_path)
    outcomes = execute_round(suite_round(repo, tmp_path / "results"))
    assert [o.status for o in outcomes] == ["ok", "ok"], [o.error for o in outcomes]
    rows = case_rows(tmp_path / "results")
    calls = json.loads(next((tmp_path / "home" / "logs").glob(f"*/{CALLS_FILE}")).read_text())
    slow_calls = calls["test_bench.py::test_slow"]
    assert slow_calls["calls"] == 1 and slow_calls["step_ms"] > 25, "a sleep of 30 ms timed on the wall clock"
    plan = BlockPlan(block_steps=2, blocks=3, block_warmup=1)  # suite_round's lockstep settings
    for row in rows.itertuples():
        blocks = json.loads(row.blocks)
        measured = [b["steps"] for b in blocks if not b["warmup"]]
        # the others: 2 steps a block, unless a host that held up their one call twice in a row
        # made their calibration find such a call (then as the plan says, on both sides)
        steps = case_plan(plan, Calibrated(**calls[row.case]), target_ms=2.0).block_steps
        assert measured == [1 if row.case == "test_bench.py::test_slow" else steps] * 3, row.case
        assert sum(b["warmup"] for b in blocks) == 3, "a 30 ms step is not long enough to warm itself"


def test_an_adaptive_round_counts_only_the_cases_whose_count_gates_are_undecided():
    cells = {(SPIN[0], "base"): {"time_ms", "instructions"}, (SPIN[0], "cand"): {"instructions"},
             (SPIN[1], "base"): {"time_ms"}, (SPIN[1], "cand"): {"time_ms"}}
    repo = FakeRepo(Path("/nonexistent"), ["a" * 40, "b" * 40])  # narrowing reads the runs' fields only
    plain, counted = (suite_round(repo, Path("/results"), instrument=flag) for flag in (False, True))
    both = (SPIN[0], SPIN[1])
    assert [(r.suite_only, r.count_only) for r in narrowed(plain, cells)] == [(both, None)] * 2
    assert [(r.suite_only, r.count_only) for r in narrowed(counted, cells)] == [(both, (SPIN[0],))] * 2
    decided = {cell: {"time_ms"} for cell in cells}
    assert [r.count_only for r in narrowed(counted, decided)] == [(), ()], "every count decided: no count"


def test_a_round_without_counts_is_expected_shorter_by_the_last_round_s_counting():
    """The deadline's estimate of the next round: a round that counted spent the time from its last
    measured block to its end under callgrind; the next round, counting nothing, will not."""
    ended = pd.Timestamp("2026-12-07 00:04:02", tz="UTC")
    blocks = json.dumps([{"block": 0, "ended": ended.timestamp() - 160.0}])
    runs = pd.DataFrame({"repeat": [0, 1, 1], "blocks": [blocks, blocks, blocks],
                         "ended_at": [ended] * 3, "instructions": [1e6, 1e6, float("nan")]})
    repo = FakeRepo(Path("/nonexistent"), ["a" * 40, "b" * 40])
    counted = suite_round(repo, Path("/results"), instrument=True)
    quiet = [replace(run, count_only=()) for run in counted]
    assert counting_s(runs, 1, quiet) == pytest.approx(160.0), "the last round counted one case"
    assert counting_s(runs, 1, counted) == 0.0, "the next round counts too"
    assert counting_s(runs.assign(instructions=float("nan")), 1, quiet) == 0.0, "nothing was counted"
    assert counting_s(runs.assign(blocks=None), 1, quiet) == 0.0, "the rows do not tell"


@needs_valgrind
def test_an_instrumented_round_counts_the_cases_it_is_told_and_no_process_for_none(tmp_path):
    repo = make_suite_repo(tmp_path, BASE_SUITE)
    runs = [replace(run, count_only=(SPIN[1],)) for run in suite_round(repo, tmp_path / "results",
                                                                           instrument=True, timeout_s=600)]
    outcomes = execute_round(runs)
    assert [o.status for o in outcomes] == ["ok", "ok"], [o.error for o in outcomes]
    rows = case_rows(tmp_path / "results")
    counted = rows.set_index(["case", "side"])["instructions"]
    assert counted[SPIN[1]].gt(0).all() and counted.drop(SPIN[1], level="case").isna().all(), counted
    runs = [replace(run, count_only=()) for run in suite_round(repo, tmp_path / "results", repeat=1,
                                                               instrument=True, timeout_s=600)]
    assert [o.status for o in execute_round(runs)] == ["ok", "ok"]
    again = case_rows(tmp_path / "results")
    assert again.loc[again["repeat"] == 1, "instructions"].isna().all()
    assert not list(Path(again.loc[again["repeat"] == 1, "log_dir"].iloc[0]).glob("callgrind.out.*"))


# under callgrind only, the candidate's process lingers an hour after its last case (at exit)
LINGERS_WHEN_COUNTED = BASE_SUITE + """

import atexit, os, time
if os.environ.get("SHASWEEP_INSTRUMENT"):
    atexit.register(time.sleep, 3600)
"""


@needs_valgrind
def test_a_counted_process_is_not_awaited_after_its_summary(tmp_path):
    """What a suite's process does after its last case (pytest's and its plugins' session end) holds
    up neither its counts nor the round: the process is ended once its summary is written."""
    repo = make_suite_repo(tmp_path, LINGERS_WHEN_COUNTED)
    runs = [replace(run, count_only=(SPIN[0],)) for run in suite_round(repo, tmp_path / "results",
                                                                           instrument=True, timeout_s=240)]
    outcomes = execute_round(runs)
    assert [o.status for o in outcomes] == ["ok", "ok"], [o.error for o in outcomes]
    counted = case_rows(tmp_path / "results").set_index(["case", "side"])["instructions"]
    assert counted[SPIN[0]].gt(0).all(), counted
    assert not any(processes_with_run_key(run.run_key) for run in runs), "the lingering process was ended"


def test_a_benchmark_that_raises_fails_the_round_naming_it_and_its_side(tmp_path):
    broken = BASE_SUITE.replace("benchmark(lib.spin, 1000)", "benchmark(lambda: 1 / 0)")
    repo = make_suite_repo(tmp_path, broken)
    runs = suite_round(repo, tmp_path / "results")
    outcomes = execute_round(runs)
    assert [o.status for o in outcomes] == ["failed", "failed"]
    assert f"benchmark {REMOVED!r} on side 'cand' (SHA {repo.shas[1][:12]})" in outcomes[1].error
    assert "ZeroDivisionError" in outcomes[1].error
    assert outcomes[0].error.startswith("killed with its lockstep round")
    rows = case_rows(tmp_path / "results")
    assert list(rows["case"]) == ["(suite)", "(suite)"], "no case kept: resume runs the round again whole"
    assert not any(processes_with_run_key(run.run_key) for run in runs), "every process of it ended"


def test_a_benchmark_that_never_answers_times_the_round_out(tmp_path):
    stuck = BASE_SUITE.replace("benchmark(lib.spin, 1000)", "import time; benchmark(time.sleep, 600)")
    repo = make_suite_repo(tmp_path, stuck)
    runs = suite_round(repo, tmp_path / "results", timeout_s=8)
    outcomes = execute_round(runs)
    assert [o.status for o in outcomes] == ["failed", "timeout"]
    assert "did not answer within timeout_s=8" in outcomes[1].error
    assert f"{REMOVED!r}" in outcomes[1].error
    assert not any(processes_with_run_key(run.run_key) for run in runs)


# after its measured blocks, the test reads pytest-benchmark's statistics: not provided in lockstep
UNSUPPORTED = BASE_SUITE.replace("benchmark(lib.spin, 1000)",
                                 "benchmark(lib.spin, 1000)\n    assert benchmark.stats.stats.mean > 0")


def test_an_unsupported_fixture_attribute_stops_the_sweep_under_fallback_stop(tmp_path):
    repo = make_suite_repo(tmp_path, UNSUPPORTED)
    outcomes = execute_round(suite_round(repo, tmp_path / "results"))
    assert [o.status for o in outcomes] == ["failed", "failed"]
    rows = case_rows(tmp_path / "results")
    assert rows["bad_input"].notna().all()
    bad_input = rows["bad_input"][0]
    assert "uses benchmark.stats" in bad_input and "lockstep.fallback: stop" in bad_input


def test_with_fallback_interleaved_that_case_runs_as_separate_processes(tmp_path):
    repo = make_suite_repo(tmp_path, UNSUPPORTED)
    outcomes = execute_round(suite_round(repo, tmp_path / "results", fallback="interleaved"))
    assert [o.status for o in outcomes] == ["ok", "ok"], [o.error for o in outcomes]
    rows = case_rows(tmp_path / "results")
    removed = rows[rows["case"] == REMOVED]
    assert set(removed["ran_in"]) == {"interleaved"} and removed["time_ms"].gt(0).all()
    assert all("uses benchmark.stats" in reason for reason in removed["lockstep_fallback"])
    assert set(rows[rows["case"] != REMOVED]["ran_in"]) == {"lockstep"}
    assert set(removed["audit_source_unit"]) == {"s"}, "read from pytest-benchmark's own output"


def test_a_suite_interpreter_without_shasweep_imports_the_worker_s_copy_of_the_kit(tmp_path):
    import subprocess
    import sys

    from orchestrator.worker.suite_kit import kit_dir

    kit = kit_dir(home=tmp_path)
    assert kit_dir(home=tmp_path) == kit, "made once per version of its sources"
    probe = ("import sys; sys.path.append(sys.argv[1]); import orchestrator.suitekit.serve, "
             "orchestrator.benchkit.callgrind; print(orchestrator.__file__)")
    found = subprocess.run([sys.executable, "-S", "-c", probe, str(kit)], capture_output=True, text=True,
                           env={"PATH": "/usr/bin:/bin"}, cwd=tmp_path)  # -S: no site-packages
    assert found.returncode == 0, found.stderr
    assert found.stdout.strip() == str(kit / "orchestrator" / "__init__.py")



@needs_valgrind
def test_instrument_counts_each_case_s_calls_under_callgrind_after_the_timed_round(tmp_path):
    candidate = BASE_SUITE.replace("benchmark(lib.spin, 1000)", "benchmark(lib.spin, 1010)")  # 1 % more work
    repo = make_suite_repo(tmp_path, candidate)
    outcomes = execute_round(suite_round(repo, tmp_path / "results", instrument=True, timeout_s=600))
    assert [o.status for o in outcomes] == ["ok", "ok"], [o.error for o in outcomes]
    rows = case_rows(tmp_path / "results")
    counts = rows.pivot(index="case", columns="side", values="instructions")
    ratio = counts["cand"] / counts["base"]
    assert abs(ratio[SPIN[0]] - 1) < 1e-3 and abs(ratio[SPIN[1]] - 1) < 1e-3, counts
    assert ratio[REMOVED] == pytest.approx(1.01, abs=2e-3), counts
    assert counts.loc[SPIN[1], "base"] / counts.loc[SPIN[0], "base"] == pytest.approx(1.5, rel=0.02)
    assert rows["host_valgrind"].str.startswith("valgrind-").all() and rows["time_ms"].gt(0).all()
    assert set(rows["ran_in"]) == {"lockstep"}, "the counts ride on the timed rows"

    # a later sweep whose native calibration chose 3x the calls per step counts the same per call:
    # each step's fixed part (the marks' requests, its timer reads) is counted apart and taken off
    sweep_id = rows["sweep_id"].iloc[0]
    calls_file = tmp_path / "home" / "logs" / sweep_id / CALLS_FILE
    # (written as sweeps before the step time wrote the file: a bare count, still read)
    calls_file.write_text(json.dumps({case: 3 * found["calls"]
                                      for case, found in json.loads(calls_file.read_text()).items()}))
    again = execute_round(suite_round(repo, tmp_path / "results", repeat=1, instrument=True, timeout_s=600))
    assert [o.status for o in again] == ["ok", "ok"], [o.error for o in again]
    rows = case_rows(tmp_path / "results")
    per_round = rows[rows["side"] == "base"].pivot(index="case", columns="repeat", values="instructions")
    moved = (per_round[1] / per_round[0] - 1).abs()
    # (0.02 % at most here; left in, the fixed part, ~32,000 instructions a step, is ~1 % of these
    # cases' count at one call per step, and a count per call moved with the calls by up to that)
    assert moved.max() < 5e-4, f"a count per call that moves with the calls per step:\n{per_round}"


def test_a_suite_tool_without_the_channel_runs_each_side_apart_and_says_so(tmp_path):
    from dataclasses import replace as changed

    # a stand-in for a Google Benchmark binary: it writes the library's own JSON, as the real one does
    fake = tmp_path / "fake_gbench.py"
    source = Path(__file__).parent / "data" / "gbench_repetitions.json"
    fake.write_text(f"import shutil, sys\nshutil.copy({str(source)!r}, sys.argv[1].split('=', 1)[1])\n")
    repo = make_suite_repo(tmp_path)
    runs = [changed(run, protocol="gbench", argv_template=("{python}", str(fake), "--benchmark_out={result}"),
                    lockstep=changed(run.lockstep, select_argv=None), suite_cases=("BM_*",))
            for run in suite_round(repo, tmp_path / "results")]
    outcomes = execute_round(runs)
    # the suite run's outcome is its first failed case's: BM_broken, which the tool reports as not run
    assert [o.status for o in outcomes] == ["failed", "failed"], [o.error for o in outcomes]
    rows = case_rows(tmp_path / "results")
    broken = rows[rows["case"] == "BM_broken"]
    assert set(broken["status"]) == {"failed"}
    assert broken["error"].str.contains("fixture file not found").all(), "the tool's own word"
    ran = rows[rows["case"] != "BM_broken"]
    assert len(ran) >= 4 and set(ran["status"]) == {"ok"} and ran["time_ms"].gt(0).all()
    assert set(rows["ran_in"]) == {"interleaved"}
    assert all("protocol gbench has no control channel" in why for why in rows["lockstep_fallback"])
