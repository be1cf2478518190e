"""Suite result documents read incrementally (docs/design.md, "Suites"): what the streaming reader
builds agrees with ``json.load`` of the same file, every sample counts in the mean while at most
``STEP_ROWS`` (or ``max_steps``) are kept, an untrusted file is refused as before, a document growing
past ``max_result_mib`` stops the bench while it runs, and a ~300 MB pytest-benchmark file costs the
reading process a small fraction of its size in memory."""

from __future__ import annotations

import json
import math
import random
import subprocess
import sys
import textwrap
from dataclasses import replace
from pathlib import Path
from statistics import fmean

import pandas as pd
import pytest
from fakebench.fakerepo import make_run
from test_suite_readers import GBENCH_JSON, reader_for

from orchestrator.capabilities import SUITE_CASE
from orchestrator.worker.bench_task import execute_run
from orchestrator.worker.protocols.json_stream import (
    SAMPLES,
    WHOLE_READ_BYTES,
    DocumentError,
    read_shaped,
    read_whole,
    shaped,
)
from orchestrator.worker.protocols.pytest_benchmark_json import PytestBenchmarkReader
from orchestrator.worker.protocols.samples import BLOCK, STEP_ROWS, Samples


def pytest_benchmark_document(rng: random.Random, rounds: list[int]) -> dict:
    """A pytest-benchmark file as the tool writes it, one benchmark per entry of ``rounds``, with the
    fields the reader skips (params, options, extra_info, commit_info) filled in."""
    benchmarks = []
    for i, count in enumerate(rounds):
        data = [rng.lognormvariate(-13, 0.3) for _ in range(count)]
        benchmarks.append({
            "group": None, "name": f"test_x[{i}]", "fullname": f"tests/test_é.py::test_x[\"{i}\"\\n]",
            "params": {"n": i, "nested": [[1, {"a": [2.5, None, True]}]]}, "param": str(i),
            "extra_info": {"note": "ünïcode \u2603", "list": list(range(50))},
            "options": {"disable_gc": False, "timer": "perf_counter", "min_rounds": 5, "max_time": 1.0},
            "stats": {"min": min(data), "max": max(data), "mean": fmean(data), "rounds": count,
                      "iqr_outliers": 3, "ops": 1 / fmean(data), "data": data}})
    return {"machine_info": {"node": "vm", "python_version": "3.11.7", "cpu": {"brand_raw": "x"}},
            "commit_info": {"id": "abc", "dirty": False}, "benchmarks": benchmarks,
            "datetime": "2026-12-06T00:00:00", "version": "4.0.0"}


def stride_for(count: int, limit: int = STEP_ROWS) -> int:
    stride = 1
    while math.ceil(count / stride) > limit:
        stride *= 2
    return stride


def test_streamed_reading_gives_what_json_load_gives(tmp_path):
    """Rounds below, at and far above the kept rows, and above a summing block: the mean is that of
    every round, the step rows every stride-th round numbered by its place."""
    rng = random.Random(5)
    document = pytest_benchmark_document(rng, [1, 7, STEP_ROWS, STEP_ROWS + 1, 5000, BLOCK + 4321])
    for entry in document["benchmarks"]:
        name, data = entry["fullname"], entry["stats"]["data"]
        reader = reader_for("pytest-benchmark", name, tmp_path / str(len(data)), document)
        assert reader.complete() is None
        stride = stride_for(len(data))
        assert [s.step for s in reader.steps] == list(range(0, len(data), stride))
        assert [s.phases["time_ms"] for s in reader.steps] == [v * 1000 for v in data[::stride]]
        rel = 0 if len(data) <= BLOCK else 1e-15  # one math.fsum up to a block: the exact mean
        mean = reader.summary["phase_means_ms"]["time_ms"]
        assert mean == pytest.approx(fmean(data) * 1000, rel=rel, abs=0)
        assert reader.header["audit"] == {
            "tool": "pytest-benchmark", "source_unit": "s", "samples": len(data),
            "versions": {"pytest-benchmark": "4.0.0", "python": "3.11.7"}}
    path = tmp_path / "whole.json"
    path.write_text(json.dumps(document))
    streamed = read_shaped(path, PytestBenchmarkReader.shape, max_bytes=2**30, samples_limit=STEP_ROWS)
    whole = shaped(json.loads(path.read_text()), PytestBenchmarkReader.shape, STEP_ROWS)
    assert _plain(streamed) == _plain(whole)
    assert set(streamed) == {"version", "machine_info", "benchmarks"}, "only what the reader needs is built"
    assert streamed["benchmarks"][0]["stats"].keys() == {"data", "mean"}


def _plain(node: object) -> object:
    """``node`` with each ``Samples`` as (count, mean, rows), for comparing two readings."""
    if isinstance(node, Samples):
        return node.count, node.mean, node.rows()
    if isinstance(node, dict):
        return {key: _plain(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_plain(value) for value in node]
    return node


def test_gbench_reads_the_same_streamed_or_whole(tmp_path):
    """Google Benchmark's file with NaN counters is read whole (the strict parser refuses the tokens);
    without them it streams: the same cases, numbers and rows."""
    text = GBENCH_JSON.read_text()
    assert "NaN" in text
    strict = json.loads(text)
    for entry in strict["benchmarks"]:
        for key in [k for k, v in entry.items() if isinstance(v, float) and math.isnan(v)]:
            del entry[key]
    for case in ("BM_sum/64", "BM_sin_us"):
        whole = reader_for("gbench", case, tmp_path / "whole" / case.replace("/", "_"), GBENCH_JSON)
        streamed = reader_for("gbench", case, tmp_path / "strict" / case.replace("/", "_"), strict)
        assert whole.complete() is None and streamed.complete() is None
        assert whole.summary == streamed.summary and whole.header == streamed.header
        assert list(whole.steps) == list(streamed.steps) and len(whole.steps) == 3


def test_many_rounds_never_fail_a_suite_and_max_steps_bounds_the_rows(tmp_path):
    """A benchmark with more rounds than ``max_steps`` keeps at most that many rows, and all its rounds in
    its mean (before, the case failed: 'more than max_steps')."""
    document = pytest_benchmark_document(random.Random(2), [5000])
    data = document["benchmarks"][0]["stats"]["data"]
    reader = reader_for("pytest-benchmark", document["benchmarks"][0]["fullname"], tmp_path, document)
    reader.run = replace(reader.run, max_steps=100)
    assert reader.complete() is None
    assert len(reader.steps) == math.ceil(5000 / stride_for(5000, 100)) <= 100
    assert reader.summary["phase_means_ms"]["time_ms"] == pytest.approx(fmean(data) * 1000, rel=1e-15)
    assert reader.header["audit"]["samples"] == 5000


def test_samples_keep_an_evenly_spaced_subset_whatever_the_blocks():
    values = [float(i) for i in range(10_007)]
    one = Samples.of(values, limit=50)
    fed = Samples(limit=50)
    for start in range(0, len(values), 333):
        fed.add_numbers(values[start:start + 333])
    assert one.rows() == fed.rows() == [(i, float(i)) for i in range(0, 10_007, 256)]
    assert one.count == fed.count == 10_007 and one.mean == fed.mean == fmean(values)
    tiny = Samples(limit=1)
    for value in values[:5]:
        tiny.add(value)
    assert tiny.rows() == [(0, 0.0)] and tiny.count == 5


DATA = '{"benchmarks": [{"fullname": "a", "stats": {"data": [%s]}}], "version": "4.0.0"}'


@pytest.mark.parametrize(("text", "problem"), [
    (DATA % "0.1, NaN", "benchmarks.0.stats.data.1: is nan, not a finite time >= 0"),
    (DATA % "0.1, -Infinity", "benchmarks.0.stats.data.1: is -inf, not a finite time >= 0"),
    (DATA % "1e999", "benchmarks.0.stats.data.0: is inf, not a finite time >= 0"),
    (DATA % ("1" + "0" * 400), "benchmarks.0.stats.data.0: is int of 1329 bits, not a finite time >= 0"),
    (DATA % ("9" * 5000), "is not valid JSON: Exceeds the limit (4300 digits)"),
    (DATA % "0.1, -0.2", "benchmarks.0.stats.data.1: is -0.2, not a finite time >= 0"),
    (DATA % '0.1, "x"', "benchmarks.0.stats.data.1: is str 'x', not a number"),
    (DATA % '0.1, {"x": [1]}', "benchmarks.0.stats.data.1: is an object, not a number"),
    (DATA % "true", "benchmarks.0.stats.data.0: is bool True, not a number"),
    (DATA % "", "benchmarks.0.stats.data: is a list of 0, not a non-empty list of numbers"),
    ('{"benchmarks": [{"fullname": "a", "stats": {"data": "0.1"}}]}',
     "benchmarks.0.stats.data: is str '0.1', not a non-empty list of numbers"),
    ('{"benchmarks": ' + "[" * 300 + "]" * 300 + "}", "is nested too deeply to parse"),
    ('{"benchmarks": [], "extra": ' + "[" * 100_000 + "]" * 100_000 + "}", "is nested too deeply to parse"),
    (DATA % "0.1" + " x", "is not valid JSON"),
    ((DATA % "0.1")[:-9], "is not valid JSON"),
], ids=["nan", "-inf", "1e999", "int-400-digits", "int-5000-digits", "negative", "text", "object", "bool",
        "empty", "not-a-list", "deep", "deep-skipped", "trailing", "truncated"])
def test_an_untrusted_file_is_refused_naming_what_is_wrong(tmp_path, text, problem):
    reader = reader_for("pytest-benchmark", "a", tmp_path, text)
    message = reader.complete()
    assert message is not None and problem in message and str(reader.result_path) in message, message
    assert reader.summary is None and list(reader.steps) == []


@pytest.mark.parametrize("text", [
    '\ufeff' + DATA % "0.25",
    '{"benchmarks": [{"fullname": "a", "extra_info": {"x": NaN, "y": [Infinity]}, '
    '"stats": {"data": [0.25]}}]}',
    '{"benchmarks": [{"fullname": "a", "stats": {"data": [1], "data": [0.25]}}]}',
    '{"benchmarks": [{"fullname": "a", "stats": {"data": [0.25]}, "params": {"big": %s}}]}' % ("7" * 30),
], ids=["byte-order-mark", "nan-where-not-read", "duplicate-key-last-wins", "big-int-where-not-read"])
def test_what_python_json_reads_still_reads(tmp_path, text):
    reader = reader_for("pytest-benchmark", "a", tmp_path, text)
    assert reader.complete() is None
    assert reader.summary["phase_means_ms"]["time_ms"] == 250.0


def test_a_large_document_the_strict_parser_refuses_fails_naming_the_file(tmp_path):
    """Past ``WHOLE_READ_BYTES`` only strict JSON reads (a NaN there cannot fall back to Python's json)."""
    path = tmp_path / "result.json"
    filler = ", ".join(["0.000123456789"] * 100_000)
    with path.open("w") as out:
        out.write('{"benchmarks": [{"fullname": "a", "stats": {"data": [NaN, ')
        while out.tell() <= WHOLE_READ_BYTES:
            out.write(filler + ", ")
        out.write("0.1]}}]}")
    with pytest.raises(DocumentError, match=r"is not strict JSON \(lexical error.*at most 64 MiB is read"):
        read_shaped(path, {"benchmarks": [{"stats": {"data": SAMPLES}}]}, max_bytes=2**30, samples_limit=10)
    with pytest.raises(DocumentError, match="holds more than max_result_mib=1 MiB"):
        read_shaped(path, {}, max_bytes=2**20, samples_limit=10)
    with pytest.raises(DocumentError, match="holds more than max_result_mib=1 MiB"):
        read_whole(path, 2**20)


GROWING_BENCH = '''
import pathlib, sys, time
result = pathlib.Path(sys.argv[1])
chunk = ("[" + ", ".join(["0.000123456789"] * 70_000) + "],\\n").encode()
with result.open("wb") as out:
    out.write(b'{"benchmarks": [{"fullname": "a", "stats": {"data": ')
    for _ in range(40):  # about 40 MiB
        out.write(chunk)
        out.flush()
        time.sleep(0.05)
pathlib.Path(sys.argv[2]).write_text("written")
time.sleep(120)
pathlib.Path(sys.argv[2]).write_text("exited")
'''


def test_a_result_growing_past_max_result_mib_stops_the_bench_while_it_runs(tmp_path, repo):
    bench = tmp_path / "grow.py"
    bench.write_text(textwrap.dedent(GROWING_BENCH))
    marker = tmp_path / "marker"
    run = replace(make_run(repo, repo.shas[0], results_root=tmp_path / "results", params={}, timeout_s=300),
                  protocol="pytest-benchmark", case=SUITE_CASE, suite_cases=("*",), algo=None, task=None,
                  sim=None, argv_template=("{python}", str(bench), "{result}", str(marker)),
                  max_result_mib=2)
    outcome = execute_run(run)
    assert outcome.status == "failed"
    assert "grew past max_result_mib=2 while the bench ran" in outcome.error, outcome.error
    assert ("stopped the bench; pytest-benchmark writes every round's time: fewer rounds with a lower "
            "--benchmark-max-time, or raise the sweep key max_result_mib") in outcome.error
    assert not marker.exists(), "stopped before it wrote its whole document"
    row = pd.read_parquet(outcome.runs_file).iloc[0]
    assert row["status"] == "failed" and row["case"] == SUITE_CASE


RSS_SCRIPT = '''
import gc, json, sys
from pathlib import Path
sys.path.insert(0, sys.argv[2])
from test_suite_readers import reader_for

def kib(field):
    return next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith(field + ":"))

path = Path(sys.argv[1])
reader = reader_for("pytest-benchmark", "t.py::test_0", path.parent / "read", "{}")
reader.result_path.unlink()
path.rename(reader.result_path)
gc.collect()
before = kib("VmRSS")
Path("/proc/self/clear_refs").write_text("5")  # the peak (VmHWM) starts again from the RSS now
problem = reader.complete()
after = kib("VmHWM")
bench = reader.benchmarks["t.py::test_7"]
print(json.dumps({"problem": problem, "grown_kib": after - before, "size": reader.result_path.stat().st_size,
                  "count": bench.count, "mean_ms": bench.summary()["phase_means_ms"]["time_ms"],
                  "rows": len(bench.steps()), "steps": len(reader.steps), "cases": len(reader.benchmarks)}))
'''


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="needs Linux's /proc/self/clear_refs")
def test_a_300_mb_pytest_benchmark_file_costs_memory_for_the_numbers_kept(tmp_path):
    """Fourteen benchmarks of 1.25 million rounds each (about 300 MB, as a fast suite with per-round
    data writes): the reading process's peak RSS grows by a small fraction of the file's size (the
    peak is reset just before the read: Linux's clear_refs)."""
    rng = random.Random(3)
    block = [round(rng.uniform(1e-6, 3e-6), 15) for _ in range(125_000)]
    text = ", ".join(repr(v) for v in block)
    path = tmp_path / "big.json"
    with path.open("w") as out:
        out.write('{"machine_info": {"python_version": "3.11.7"}, "version": "4.0.0", "benchmarks": [')
        for b in range(14):
            out.write(("" if b == 0 else ", ") + f'{{"fullname": "t.py::test_{b}", "stats": {{"data": [')
            out.write(", ".join([text] * 10))
            out.write("]}}")
        out.write("]}")
    size = path.stat().st_size
    assert 270e6 < size < 350e6
    proc = subprocess.run([sys.executable, "-c", RSS_SCRIPT, str(path), str(Path(__file__).parent)],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout)
    assert found["problem"] is None and found["cases"] == 14
    assert found["count"] == 1_250_000 and found["rows"] == found["steps"] <= STEP_ROWS
    assert found["mean_ms"] == pytest.approx(math.fsum(block) / len(block) * 1000, rel=1e-13)
    ratio = found["grown_kib"] * 1024 / found["size"]
    print(f"peak RSS grew by {ratio:.3f} x the file's size ({found['size'] / 1e6:.0f} MB)")
    assert ratio < 0.1, found
