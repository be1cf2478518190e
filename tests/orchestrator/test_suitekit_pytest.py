"""The pytest plugin that runs an unchanged pytest-benchmark suite in lockstep
(``orchestrator.suitekit.pytest_plugin``), driven through a real control FIFO and stream by a stand-in
for the worker: a real pytest process collects once, runs only the benchmarks, each inside its test
on command, with the fixture's API and pytest-codspeed's marker form."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from suite_driver import Driver

SUITE = '''
import pytest

CALLS = {"setup": 0}


def work(n):
    return sum(i * i for i in range(n))


def test_plain(benchmark):
    assert benchmark(work, 200) == work(200)


@pytest.mark.parametrize("n", [10, 20])
@pytest.mark.benchmark(group="sizes")
def test_param(benchmark, n):
    benchmark.extra_info["n"] = n
    benchmark(work, n)


def test_pedantic(benchmark):
    def setup():
        CALLS["setup"] += 1
        return ([3, 1, 2],), {}
    assert benchmark.pedantic(sorted, setup=setup, rounds=3) == [1, 2, 3]


def test_fixed_iterations(benchmark):
    benchmark.pedantic(work, args=(50,), iterations=7, rounds=2)


@pytest.mark.benchmark
def test_body():
    work(100)


def test_not_a_benchmark():
    raise AssertionError("deselected in lockstep: must never run")


def test_weave(benchmark):
    benchmark.weave(work)


def test_skipped(benchmark):
    pytest.skip("not here")


def test_never_calls(benchmark):
    pass


def test_raises(benchmark):
    benchmark(lambda: 1 / 0)
'''
NAMES = ["test_suite.py::test_plain", "test_suite.py::test_param[10]", "test_suite.py::test_param[20]",
         "test_suite.py::test_pedantic", "test_suite.py::test_fixed_iterations", "test_suite.py::test_body",
         "test_suite.py::test_weave", "test_suite.py::test_skipped", "test_suite.py::test_never_calls",
         "test_suite.py::test_raises"]


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    (tmp_path / "test_suite.py").write_text(textwrap.dedent(SUITE))
    return tmp_path


def run_case(driver: Driver, case: str, calls: int | None = None, blocks: int = 2) -> tuple[dict, list[dict]]:
    """Calibrate (unless ``calls``) and run ``blocks`` measured blocks of 3 steps: (calibrated, blocks)."""
    assert driver.next("case", "case_end")["case"] == case
    calibrated = None
    if calls is None:
        driver.send(cmd="calibrate", case=case, target_ms=2)
        calibrated = driver.next("calibrated")
        calls = calibrated["calls"]
    found = []
    for number in range(blocks):
        driver.send(cmd="run", case=case, steps=3, block=number, warmup=number == 0, calls=calls)
        found.append(driver.next("block"))
    driver.send(cmd="next")
    return calibrated, found


def test_the_plugin_collects_once_and_serves_each_benchmark_inside_its_test(suite):
    driver = Driver.pytest(suite, "test_suite.py", "--benchmark-json=out.json", "--benchmark-max-time=0.1")
    try:
        header = driver.next("header")
        assert header["control"] == 1 and header["suite"] == 1 and header["cases"] == NAMES
        assert header["audit"]["tool"] == "pytest-benchmark" and header["audit"]["module_file"] == str(suite)
        wanted = [NAMES[2], NAMES[0], NAMES[3], NAMES[4], NAMES[5]]  # the worker's order, a subset
        driver.send(cmd="cases", cases=wanted)
        calibrated, blocks = run_case(driver, NAMES[2])
        assert calibrated["calls"] >= 1 and [b["calls"] for b in blocks] == [calibrated["calls"]] * 2
        assert calibrated["step_ms"] >= 0.9 * 2, "the calibration says how long its step of those calls took"
        steps = [r for r in driver.records if r["kind"] == "step"]
        assert len(steps) == 6 and all(s["case"] == NAMES[2] and s["phases"]["time_ms"] > 0 for s in steps)
        assert all(s["phases"]["cpu_ms"] >= s["phases"]["thread_cpu_ms"] > 0 for s in steps), \
            "the plugin times each step's calls on the CPU clocks too, per call"
        assert [s["step"] for s in steps] == list(range(6))
        assert [s["block"] for s in steps] == [0, 0, 0, 1, 1, 1]
        assert driver.next("case_end") == {"kind": "case_end", "case": NAMES[2], "outcome": "passed",
                                           "message": None, "extra_info": {"group": "sizes", "n": 20}}
        run_case(driver, NAMES[0], calls=5)
        assert driver.next("case_end")["outcome"] == "passed"  # its assert on the result held
        run_case(driver, NAMES[3])
        assert driver.next("case_end")["outcome"] == "passed"
        pedantic = [r["phases"] for r in driver.records if r["kind"] == "step" and r["case"] == NAMES[3]]
        assert all(p["cpu_ms"] > 0 for p in pedantic), "a setup's calls untimed, the target's timed"
        calibrated, blocks = run_case(driver, NAMES[4])
        assert calibrated["calls"] == 7, "pedantic's iterations fix the calls per step"
        assert "step_ms" not in calibrated, "no step was timed to fix them"
        assert driver.next("case_end")["outcome"] == "passed"
        run_case(driver, NAMES[5], calls=3)
        assert driver.next("case_end")["outcome"] == "passed"
        assert driver.next("summary")["cases"] == 5
        assert driver.finish() == 0
    finally:
        driver.kill()
    assert "5 passed, 6 deselected" in driver.output(), "only the benchmarks asked for ran"


def test_unsupported_api_skips_absent_and_failing_benchmarks_each_say_so(suite):
    driver = Driver.pytest(suite, "test_suite.py")
    try:
        assert driver.next("header")["cases"] == NAMES
        driver.send(cmd="cases", cases=NAMES[6:])
        weave = driver.next("case_end")
        assert (weave["outcome"], weave["api"]) == ("unsupported", "benchmark.weave")
        assert driver.next("case_end")["outcome"] == "skipped"
        absent = driver.next("case_end")
        assert absent["outcome"] == "absent" and "never called" in absent["message"]
        assert driver.next("case", "case_end")["kind"] == "case"  # test_raises: parked in its case
        driver.send(cmd="calibrate", case=NAMES[9], target_ms=1)
        failed = driver.next("case_end")
        assert failed["outcome"] == "failed" and "ZeroDivisionError" in failed["message"]
        driver.next("summary")
        assert driver.finish() == 1  # pytest's own verdict: a test failed
    finally:
        driver.kill()


def test_end_stops_the_session_before_the_remaining_benchmarks(suite):
    driver = Driver.pytest(suite, "test_suite.py")
    try:
        driver.next("header")
        driver.send(cmd="cases", cases=NAMES[:2])
        driver.next("case")
        driver.send(cmd="end")
        assert driver.next("case_end")["outcome"] == "passed"
        assert driver.next("summary")["cases"] == 1
        driver.proc.wait(60)
        assert driver.proc.returncode == 0
        assert not any(r.get("case") == NAMES[1] for r in driver.records), "no case after end"
    finally:
        driver.kill()


def test_without_the_channel_options_the_plugin_is_a_usage_error(suite):
    import subprocess
    import sys

    from suite_driver import PLUGIN_ARGS, ROOT

    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", *PLUGIN_ARGS, "test_suite.py"], cwd=suite,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, capture_output=True,
                          text=True)
    assert proc.returncode == pytest.ExitCode.USAGE_ERROR
    assert "needs --shasweep-control" in proc.stderr
