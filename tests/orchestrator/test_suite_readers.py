"""The suite readers (pyperf, pytest-benchmark, gbench) on output written by the real tools: pyperf
and pytest-benchmark run here on tiny suites, Google Benchmark's from the checked-in JSON its library
wrote (data/gbench_repetitions.json; compiled afresh too where libbenchmark-dev is installed). Each
reader's numbers are checked against the tool's own reading of the same file, and malformed files fail
the run naming the file and the offending path."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pyperf
import pytest
from fakebench.fakerepo import make_run

from orchestrator.capabilities import Capability, describe
from orchestrator.contract import PlannedRun
from orchestrator.worker.bench_task import execute_run
from orchestrator.worker.protocols import make_reader
from orchestrator.worker.protocols.samples import STEP_ROWS
from orchestrator.worker.protocols.suite import SuiteReader

DATA = Path(__file__).parent / "data"
GBENCH_JSON = DATA / "gbench_repetitions.json"

PYPERF_SUITE = '''
import pyperf

def sum_large(loops):
    total = 0.0
    for _ in range(loops):
        t0 = pyperf.perf_counter()
        for _ in range(10):  # ten calls per loop: inner_loops=10
            sum(range(1000))
        total += pyperf.perf_counter() - t0
    return total

runner = pyperf.Runner()
runner.timeit("sum_small", stmt="sum(range(100))")
runner.bench_time_func("sum_large", sum_large, inner_loops=10)
'''

PYTEST_SUITE = '''
import pytest

def test_small(benchmark):
    benchmark(sum, range(100))

@pytest.mark.parametrize("n", [10, 1000])
def test_sized(benchmark, n):
    benchmark.pedantic(sum, args=(range(n),), rounds=4, iterations=5)
'''


def reader_for(protocol: str, case: str, log_dir: Path, document: Path | str | dict) -> SuiteReader:
    """A reader of ``protocol`` for ``case`` whose bench left ``document`` at ``{result}``."""
    run = PlannedRun(sweep_id="s", run_key="k", order=0, side="base", ref="HEAD", sha="0" * 40, case=case,
                     algo=None, task=None, sim=None, variant="manager", repeat=0, repo=str(log_dir),
                     argv_template=("true",), protocol=protocol)
    log_dir.mkdir(parents=True, exist_ok=True)
    reader = make_reader(run, log_dir)
    assert isinstance(reader, SuiteReader)
    if isinstance(document, Path):
        shutil.copyfile(document, reader.result_path)
    else:
        reader.result_path.write_text(document if isinstance(document, str) else json.dumps(document))
    return reader


@pytest.fixture(scope="module")
def pyperf_output(tmp_path_factory) -> Path:
    """pyperf's own file of a two-benchmark suite: 2 worker processes x 3 values, 1 warm-up each."""
    where = tmp_path_factory.mktemp("pyperf")
    (where / "suite.py").write_text(PYPERF_SUITE)
    out = where / "out.json"
    subprocess.run([sys.executable, "suite.py", "--processes", "2", "--values", "3", "--warmups", "1",
                    "--min-time", "0.002", "--quiet", "-o", str(out)], cwd=where, check=True, timeout=600,
                   capture_output=True)
    return out


@pytest.fixture(scope="module", params=[True, False], ids=["benchmark-json", "saved-stats-only"])
def pytest_benchmark_output(request, tmp_path_factory) -> tuple[Path, bool]:
    """pytest-benchmark's own file of a three-benchmark suite: ``--benchmark-json`` (which always
    holds ``stats.data``), or ``--benchmark-save`` without ``--benchmark-save-data`` (stats only)."""
    where = tmp_path_factory.mktemp("pytest-benchmark")
    (where / "test_suite.py").write_text(PYTEST_SUITE)
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_suite.py",
            "--benchmark-min-rounds=3", "--benchmark-max-time=0.01"]
    if request.param:
        argv.append(f"--benchmark-json={where / 'out.json'}")
    else:
        argv += ["--benchmark-save=stats", f"--benchmark-storage=file://{where / 'saved'}"]
    subprocess.run(argv, cwd=where, check=True, timeout=600, capture_output=True)
    out = where / "out.json" if request.param else next((where / "saved").rglob("*_stats.json"))
    return out, request.param


def test_pyperf_reads_every_worker_process_value_without_warmups(pyperf_output, tmp_path):
    suite = pyperf.BenchmarkSuite.load(str(pyperf_output))
    for bench in suite.get_benchmarks():
        reader = reader_for("pyperf", bench.get_name(), tmp_path / bench.get_name(), pyperf_output)
        assert reader.complete() is None
        expected = [v * 1000 for v in bench.get_values()]  # pyperf's own reading: per call, warm-ups out
        assert len(expected) == 2 * 3, "2 processes x 3 values; the calibration run has none"
        assert [s.phases["time_ms"] for s in reader.steps] == pytest.approx(expected, rel=1e-12)
        assert not any(s.warmup for s in reader.steps)
        assert reader.summary["phase_means_ms"]["time_ms"] == pytest.approx(bench.mean() * 1000, rel=1e-12)
        assert reader.summary["throughput"] == pytest.approx(1 / bench.mean(), rel=1e-12)
        assert reader.header["audit"]["source_unit"] == "second"
        assert reader.header["audit"]["versions"]["pyperf"] == pyperf.__version__
    large = next(b for b in suite.get_benchmarks() if b.get_name() == "sum_large")
    # the values above are per call, not per loop of ten: the file says inner_loops, and the reader's
    # values equal pyperf's own (which divides by it) exactly; a ratio of two timings would say the
    # same only when the machine is idle
    assert large.get_metadata()["inner_loops"] == 10


def test_pyperf_memory_benchmarks_have_a_unit_that_is_not_a_time(tmp_path):
    (tmp_path / "suite.py").write_text(PYPERF_SUITE)
    out = tmp_path / "memory.json"
    subprocess.run([sys.executable, "suite.py", "--processes", "1", "--values", "1", "--warmups", "0",
                    "--loops", "1", "--track-memory", "--quiet", "-o", str(out)], cwd=tmp_path, check=True,
                   timeout=600, capture_output=True)
    reader = reader_for("pyperf", "sum_small", tmp_path / "r", out)
    assert reader.complete() == (f"pyperf output {reader.result_path}: metadata.unit: unit 'byte' cannot be "
                                 "converted to ms for time_ms (known: s, second, ms, us, ns)")


def test_pytest_benchmark_samples_when_saved_else_its_stats(pytest_benchmark_output, tmp_path):
    path, saved = pytest_benchmark_output
    document = json.loads(path.read_text())
    names = [b["fullname"] for b in document["benchmarks"]]
    assert names == ["test_suite.py::test_small", "test_suite.py::test_sized[10]",
                     "test_suite.py::test_sized[1000]"]
    for entry in document["benchmarks"]:
        reader = reader_for("pytest-benchmark", entry["fullname"], tmp_path / str(len(entry["name"])), path)
        assert reader.complete() is None
        stats = entry["stats"]
        assert reader.summary["phase_means_ms"]["time_ms"] == pytest.approx(stats["mean"] * 1000, rel=1e-9)
        samples = [s.phases["time_ms"] for s in reader.steps]
        if saved:  # every round in the mean; at most STEP_ROWS of them, evenly spaced, as steps
            stride = 1
            while math.ceil(stats["rounds"] / stride) > STEP_ROWS:
                stride *= 2
            assert samples == pytest.approx([v * 1000 for v in stats["data"][::stride]], rel=1e-12)
            assert [s.step for s in reader.steps] == list(range(0, stats["rounds"], stride))
            assert reader.header["audit"]["samples"] == len(stats["data"]) == stats["rounds"]
        else:
            assert "data" not in stats and samples == []
        assert reader.header["audit"]["source_unit"] == "s"
    sized = reader_for("pytest-benchmark", names[2], tmp_path / "sized", path)
    assert sized.complete() is None and (len(sized.steps) == 4) is saved, "pedantic rounds=4"


def test_gbench_repetitions_are_samples_and_aggregates_are_not_counted(tmp_path):
    document = json.loads(GBENCH_JSON.read_text())  # NaN counters parse
    entries = document["benchmarks"]
    for name, unit_ms in (("BM_sum/64", 1e-6), ("BM_sum/512", 1e-6), ("BM_sin_us", 1e-3)):
        reader = reader_for("gbench", name, tmp_path / name.replace("/", "_"), GBENCH_JSON)
        assert reader.complete() is None
        repetitions = [e for e in entries if e["run_name"] == name and e["run_type"] == "iteration"]
        mean = next(e for e in entries if e["run_name"] == name and e.get("aggregate_name") == "mean")
        assert len(repetitions) == 3 and len(reader.steps) == 3, "aggregates are not samples"
        assert [s.phases["time_ms"] for s in reader.steps] == pytest.approx(
            [e["real_time"] * unit_ms for e in repetitions], rel=1e-12)
        assert [s.phases["cpu_time_ms"] for s in reader.steps] == pytest.approx(
            [e["cpu_time"] * unit_ms for e in repetitions], rel=1e-12)
        # the tool's own mean aggregate agrees with the mean of the samples
        assert reader.summary["phase_means_ms"]["time_ms"] == pytest.approx(mean["real_time"] * unit_ms,
                                                                            rel=1e-9)
        assert reader.header["audit"]["source_unit"] == repetitions[0]["time_unit"]
    broken = reader_for("gbench", "BM_broken", tmp_path / "broken", GBENCH_JSON)
    assert broken.complete() == "gbench benchmark 'BM_broken' did not run: fixture file not found"
    assert broken.summary is None
    assert set(broken.benchmarks) == {"BM_sum/64", "BM_sum/512", "BM_sin_us", "BM_broken"}


def test_gbench_aggregates_only_gives_the_mean_and_no_steps(tmp_path):
    document = json.loads(GBENCH_JSON.read_text())
    document["benchmarks"] = [e for e in document["benchmarks"] if e["run_type"] == "aggregate"]
    reader = reader_for("gbench", "BM_sum/64", tmp_path, document)
    assert reader.complete() is None and list(reader.steps) == []
    mean = next(e for e in document["benchmarks"] if e["name"] == "BM_sum/64_mean")
    assert reader.summary["phase_means_ms"]["time_ms"] == pytest.approx(mean["real_time"] * 1e-6)


@pytest.mark.skipif(not Path("/usr/include/benchmark/benchmark.h").exists() or not shutil.which("g++"),
                    reason="Google Benchmark (Debian's libbenchmark-dev) or g++ is not installed")
def test_gbench_reads_what_the_library_writes_now(tmp_path):
    binary = tmp_path / "suite"
    subprocess.run(["g++", "-O2", str(DATA / "gbench_suite.cc"), "-o", str(binary), "-lbenchmark",
                    "-lpthread"], check=True, timeout=600)
    out = tmp_path / "out.json"
    subprocess.run([str(binary), f"--benchmark_out={out}", "--benchmark_out_format=json",
                    "--benchmark_repetitions=2", "--benchmark_min_time=0.001"], check=True, timeout=600,
                   capture_output=True)
    reader = reader_for("gbench", "BM_sum/512", tmp_path / "r", out)
    assert reader.complete() is None and len(reader.steps) == 2
    assert reader.summary["phase_means_ms"]["time_ms"] > 0


def test_suite_protocols_declare_many_cases_and_time_ms():
    for name in ("pyperf", "pytest-benchmark", "gbench"):
        info = describe(name)
        assert info.has(Capability.MANY_CASES | Capability.RESULT_DOCUMENT)
        assert not info.has(Capability.JSON_MAPPING)
        assert "time_ms" in info.provides and info.throughput_unit == "calls"
    assert describe("gbench").provides == {"throughput", "time_ms", "cpu_time_ms"}
    assert describe("pyperf").has(Capability.STEPS), "every pyperf run keeps its values"
    assert not describe("pytest-benchmark").has(Capability.STEPS), "stats-only files have no samples"


def _gbench_entry(document: dict, index: int) -> dict:
    return document["benchmarks"][index]


@pytest.mark.parametrize(("protocol", "case", "break_it", "words"), [
    ("gbench", "BM_sum/64", lambda d: _gbench_entry(d, 0).pop("time_unit"),
     "benchmarks.0.time_unit: missing"),
    ("gbench", "BM_sum/64", lambda d: _gbench_entry(d, 1).update(real_time=math.nan),
     "benchmarks.1.real_time: is nan, not a finite time >= 0"),
    ("gbench", "BM_sum/64", lambda d: _gbench_entry(d, 2).update(cpu_time=math.inf),
     "benchmarks.2.cpu_time: is inf, not a finite time >= 0"),
    ("gbench", "BM_sum/64", lambda d: _gbench_entry(d, 0).update(time_unit="fortnight"),
     "benchmarks.0.time_unit: unit 'fortnight' cannot be converted to ms"),
    ("gbench", "BM_sum/64", lambda d: d.update(benchmarks={"BM_sum/64": 1}),
     "benchmarks: is an object, not a list"),
    ("gbench", "BM_sum/64", lambda d: d.pop("context"), "context: missing"),
    ("gbench", "BM_sum/64", lambda d: _gbench_entry(d, 1).update(real_time="fast"),
     "benchmarks.1.real_time: is str 'fast', not a number"),
])
def test_malformed_gbench_files_name_the_path(tmp_path, protocol, case, break_it, words):
    document = json.loads(GBENCH_JSON.read_text())
    break_it(document)
    reader = reader_for(protocol, case, tmp_path, json.dumps(document))  # NaN/Infinity tokens, as gbench
    problem = reader.complete()
    assert problem == f"gbench output {reader.result_path}: {words}" or (
        problem.startswith(f"gbench output {reader.result_path}: {words}")), problem
    assert reader.summary is None and list(reader.steps) == []


def test_malformed_pyperf_and_pytest_benchmark_files_name_the_path(pyperf_output, pytest_benchmark_output,
                                                                  tmp_path):
    perf = json.loads(pyperf_output.read_text())
    perf["benchmarks"][0]["runs"][1]["values"][0] = math.nan
    reader = reader_for("pyperf", "sum_small", tmp_path / "nan", json.dumps(perf))
    assert reader.complete() == (f"pyperf output {reader.result_path}: benchmarks.0.runs.1.values.0: "
                                 "is nan, not a finite time >= 0")
    perf["version"] = "6"
    reader = reader_for("pyperf", "sum_small", tmp_path / "old", json.dumps(perf))
    assert "version: is pyperf file format '6'" in reader.complete()
    path, _ = pytest_benchmark_output
    bench = json.loads(path.read_text())
    del bench["benchmarks"][1]["stats"]
    reader = reader_for("pytest-benchmark", "test_suite.py::test_small", tmp_path / "stats", bench)
    assert reader.complete() == f"pytest-benchmark output {reader.result_path}: benchmarks.1.stats: missing"


@pytest.mark.parametrize("protocol", ["pyperf", "pytest-benchmark", "gbench"])
def test_truncated_or_missing_files_fail_naming_the_file(tmp_path, protocol):
    text = GBENCH_JSON.read_text()
    truncated = reader_for(protocol, "x", tmp_path / "cut", text[: len(text) // 2])
    assert truncated.complete().startswith(f"result document {truncated.result_path} is not valid JSON")
    missing = reader_for(protocol, "x", tmp_path / "gone", "{}")
    missing.result_path.unlink()
    assert "without writing its result document" in missing.complete()
    empty = reader_for(protocol, "x", tmp_path / "empty", {"benchmarks": [], "context": {}, "version": "1.0"})
    assert empty.complete() == f"{protocol} output {empty.result_path} holds no benchmark"


def test_an_unknown_case_names_what_the_file_has(tmp_path):
    reader = reader_for("gbench", "BM_nope", tmp_path, GBENCH_JSON)
    assert reader.complete() == (f"gbench output {reader.result_path} has no benchmark named 'BM_nope'; "
                                 "it has 'BM_sum/64', 'BM_sum/512', 'BM_sin_us', 'BM_broken'")


def test_a_pyperf_bench_through_the_worker_stores_time_ms_and_its_samples(tmp_path, repo):
    suite = tmp_path / "suite.py"
    suite.write_text(PYPERF_SUITE)
    run = replace(make_run(repo, repo.shas[0], results_root=tmp_path / "results", params={}),
                  protocol="pyperf", case="sum_small", algo=None, task=None, sim=None,
                  argv_template=("{python}", str(suite), "--processes", "2", "--values", "2",
                                 "--warmups", "1", "--min-time", "0.002", "--quiet", "-o", "{result}"))
    outcome = execute_run(run)
    assert outcome.status == "ok", outcome.error
    row = pd.read_parquet(outcome.runs_file).iloc[0]
    steps = pd.read_parquet(outcome.steps_file)
    assert set(steps["phase"]) == {"time_ms"} and len(steps) == 4 and row["steps"] == 4
    assert row["time_ms"] == pytest.approx(steps["ms"].mean(), rel=1e-12)
    assert row["throughput"] == pytest.approx(1000 / row["time_ms"], rel=1e-12)
    assert row["audit_source_unit"] == "second" and row["audit_tool"] == "pyperf"
    own = pyperf.BenchmarkSuite.load(str(Path(outcome.log_dir) / "result.json")).get_benchmark("sum_small")
    assert row["time_ms"] == pytest.approx(own.mean() * 1000, rel=1e-12), "pyperf's own mean of the file"
    missing = execute_run(replace(run, case="sum_nothing", run_key="other"))
    assert missing.status == "failed" and "has no benchmark named 'sum_nothing'" in missing.error
