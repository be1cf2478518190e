"""The pyperf shim (``orchestrator.suitekit.pyperf_shim``) that runs an unchanged pyperf script in
lockstep, driven through a real control FIFO and stream by a stand-in for the worker: the script's
benchmarks are collected (pyperf spawns no worker process) and served in the process on command; a
``bench_command`` is listed as a case that runs apart; a time that is not finite fails its case. And
the selection shim that runs only listed benchmarks with pyperf itself."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from suite_driver import ROOT, Driver

SCRIPT = '''
import asyncio
import time

import pyperf


def work(n):
    return sum(i * i for i in range(n))


def cpu_timed(loops):
    t0 = time.perf_counter()
    for _ in range(loops):
        work(100)
    return time.perf_counter() - t0


async def tick():
    await asyncio.sleep(0)


runner = pyperf.Runner()
runner.argparser.add_argument("--size", type=int, default=50)
size = runner.parse_args().size
runner.bench_func("func", work, size)
runner.bench_time_func("time_func", cpu_timed, inner_loops=2)
runner.bench_async_func("async", tick)
runner.timeit("timeit", stmt="sorted(data)", setup="data = list(range(100, 0, -1))")
runner.bench_command("command", [sys.executable, "-c", "pass"])
runner.bench_time_func("nan", lambda loops: float("nan"))
runner.bench_func("raises", lambda: 1 / 0)
'''
CPU_TIMED = ["time_ms", "cpu_ms", "thread_cpu_ms"]  # where the shim times the calls itself
NAMES = ["func", "time_func", "async", "timeit", "command", "nan", "raises"]


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "bench.py"
    path.write_text("import sys\n" + textwrap.dedent(SCRIPT))
    return path


def shim(tmp_path: Path, *args: str) -> Driver:
    control, stream = tmp_path / "control.fifo", tmp_path / "stream.jsonl"
    return Driver([sys.executable, "-m", "orchestrator.suitekit.pyperf_shim", "--control", str(control),
                   "--stream", str(stream), *args], tmp_path)


def serve(driver: Driver, case: str, calls: int | None = None) -> list[dict]:
    entered = driver.next("case", "case_end")
    assert (entered["kind"], entered["case"]) == ("case", case)
    if calls is None:
        driver.send(cmd="calibrate", case=case, target_ms=2)
        calls = driver.next("calibrated")["calls"]
    driver.send(cmd="run", case=case, steps=3, block=0, warmup=False, calls=calls)
    driver.next("block")
    driver.send(cmd="next")
    return [r for r in driver.records if r["kind"] == "step" and r["case"] == case]


def test_the_script_s_benchmarks_are_collected_then_served_in_the_process(tmp_path, script):
    driver = shim(tmp_path, "bench.py", "--size", "80", "--processes", "4", "-o", "out.json")
    try:
        header = driver.next("header")
        assert header["cases"] == NAMES and header["separate"] == {"command": "pyperf's bench_command"}
        assert header["audit"]["tool"] == "pyperf" and header["audit"]["versions"]["pyperf"]
        driver.send(cmd="cases", cases=["timeit", "func", "time_func", "async"])
        for case, phases in (("timeit", ["time_ms"]), ("func", CPU_TIMED)):
            steps = serve(driver, case)
            assert all(list(s["phases"]) == phases and s["phases"]["time_ms"] > 0 for s in steps)
            if case == "func":  # where the benchmarked function is defined: tools may change it
                entered = next(r for r in driver.records if r["kind"] == "case" and r["case"] == "func")
                assert entered["target"] == "__main__:work" and entered["target_file"].endswith("bench.py")
            assert driver.next("case_end")["outcome"] == "passed"
        steps = serve(driver, "time_func", calls=10)
        assert driver.next("case_end")["outcome"] == "passed"
        assert all(0 < s["phases"]["time_ms"] for s in steps), "a time per inner loop"
        assert all(list(s["phases"]) == ["time_ms"] for s in steps), "a time_func times itself: no CPU time"
        steps = serve(driver, "async", calls=5)
        assert driver.next("case_end")["outcome"] == "passed"
        assert all(list(s["phases"]) == CPU_TIMED and s["phases"]["cpu_ms"] > 0 for s in steps)
        assert driver.next("summary")["cases"] == 4
        assert driver.finish() == 0, driver.output()
    finally:
        driver.kill()
    assert not (tmp_path / "out.json").exists(), "pyperf itself never ran a benchmark"


def test_a_time_that_is_not_finite_or_a_raise_fails_its_case_naming_it(tmp_path, script):
    driver = shim(tmp_path, "bench.py")
    try:
        driver.next("header")
        driver.send(cmd="cases", cases=["nan", "raises"])
        assert driver.next("case")["case"] == "nan"
        driver.send(cmd="run", case="nan", steps=2, block=0, warmup=True, calls=3)
        nan = driver.next("case_end")
        assert nan["outcome"] == "failed" and "took nan s: not a finite time" in nan["message"]
        assert driver.next("case")["case"] == "raises"
        driver.send(cmd="calibrate", case="raises", target_ms=1)
        raised = driver.next("case_end")
        assert raised["outcome"] == "failed" and "ZeroDivisionError" in raised["message"]
        driver.next("summary")
    finally:
        driver.kill()


def test_a_script_that_fails_before_its_benchmarks_writes_an_error_record(tmp_path):
    (tmp_path / "bench.py").write_text("import pyperf\nraise RuntimeError('no data file')\n")
    driver = shim(tmp_path, "bench.py")
    try:
        error = driver.next("error")
        assert "the pyperf script failed: no data file" in error["message"]
        driver.proc.wait(60)
        assert driver.proc.returncode == 1
    finally:
        driver.kill()


def test_the_selection_shim_runs_only_the_listed_benchmarks_with_pyperf_itself(tmp_path):
    (tmp_path / "bench.py").write_text(textwrap.dedent('''
        import pyperf
        runner = pyperf.Runner()
        runner.bench_func("one", sum, range(10))
        runner.timeit("two", "sorted(range(50))")
        runner.bench_func("three", sum, range(30))
    '''))
    (tmp_path / "select.json").write_text(json.dumps(["three"]))
    proc = subprocess.run([sys.executable, "-m", "orchestrator.suitekit.pyperf_select", "--select",
                           "select.json", "bench.py", "--processes", "2", "--values", "2", "--loops", "4",
                           "--quiet", "-o", "out.json"], cwd=tmp_path, capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=300)
    assert proc.returncode == 0, proc.stderr
    written = json.loads((tmp_path / "out.json").read_text())
    names = [{**written.get("metadata", {}), **b.get("metadata", {})}["name"] for b in written["benchmarks"]]
    assert names == ["three"]
    values = [v for run in written["benchmarks"][0]["runs"] for v in run.get("values", [])]
    assert len(values) == 4, "pyperf's own worker processes ran the listed benchmark, and only it"
