"""Protocol pytest-benchmark: the JSON file ``pytest --benchmark-json={result}`` writes.

A benchmark is named by its ``fullname`` (``tests/test_x.py::test_y[param]``). Its ``stats.data``
holds every round's time per call (``--benchmark-json`` always writes it; ``--benchmark-save`` only
with ``--benchmark-save-data``): those are its samples (streamed: a fast benchmark has hundreds of
thousands of rounds, all in its mean, at most ``samples.STEP_ROWS`` as step rows). A file with only
the statistics gives the run ``stats.mean`` as its value and no step rows. pytest-benchmark writes
seconds.
"""

from __future__ import annotations

from orchestrator.capabilities import TIME_METRIC
from orchestrator.worker.protocols.json_stream import KEEP, SAMPLES
from orchestrator.worker.protocols.samples import Samples
from orchestrator.worker.protocols.suite import (
    Benchmark,
    SuiteReader,
    get_list,
    get_number,
    get_object,
    get_text,
    ms_per,
    samples_at,
)

UNIT = "s"


class PytestBenchmarkReader(SuiteReader):
    protocol = "pytest-benchmark"
    tool = "pytest-benchmark"
    shape = {"version": KEEP, "machine_info": {"python_version": KEEP},
             "benchmarks": [{"fullname": KEEP, "stats": {"data": SAMPLES, "mean": KEEP}}]}
    write_less = ("pytest-benchmark writes every round's time: fewer rounds with a lower "
                  "--benchmark-max-time")

    def parse(self, document: object) -> tuple[list[Benchmark], dict]:
        benchmarks = [_benchmark(entry, f"benchmarks.{i}")
                      for i, entry in enumerate(get_list(document, "benchmarks", ""))]
        machine = get_object(document, "machine_info", "", optional=True)
        versions = {"pytest-benchmark": get_text(document, "version", "", default="unknown")}
        if isinstance(machine.get("python_version"), str):
            versions["python"] = machine["python_version"]
        return benchmarks, {"tool": self.tool, "versions": versions}


def _benchmark(entry: object, path: str) -> Benchmark:
    name = get_text(entry, "fullname", path)
    stats = get_object(entry, "stats", path)
    scale = ms_per(UNIT, f"{path}.stats")
    if "data" in stats:
        samples = samples_at(stats["data"], f"{path}.stats.data")
        return Benchmark(name=name, unit=UNIT, samples={TIME_METRIC: samples}, ms_per_unit=scale)
    mean = get_number(stats, "mean", f"{path}.stats")
    return Benchmark(name=name, unit=UNIT, samples={TIME_METRIC: Samples.of([mean])}, ms_per_unit=scale,
                     steps_kept=False)
