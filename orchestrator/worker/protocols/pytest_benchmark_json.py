"""Protocol pytest-benchmark: the JSON file ``pytest --benchmark-json={result}`` writes.

A benchmark is named by its ``fullname`` (``tests/test_x.py::test_y[param]``). Its ``stats.data``
holds every round's time per call (``--benchmark-json`` always writes it; ``--benchmark-save`` only
with ``--benchmark-save-data``): those are its samples (step rows). A file with only the statistics
gives the run ``stats.mean`` as its value and no step rows. pytest-benchmark writes seconds.
"""

from __future__ import annotations

from orchestrator.capabilities import TIME_METRIC
from orchestrator.worker.protocols.suite import (
    Benchmark,
    SuiteReader,
    get_list,
    get_number,
    get_object,
    get_text,
    numbers,
    to_ms,
)

UNIT = "s"


class PytestBenchmarkReader(SuiteReader):
    protocol = "pytest-benchmark"
    tool = "pytest-benchmark"

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
    if "data" in stats:
        samples = to_ms(numbers(stats["data"], f"{path}.stats.data"), UNIT, f"{path}.stats")
        return Benchmark(name=name, unit=UNIT, samples_ms={TIME_METRIC: samples})
    mean = get_number(stats, "mean", f"{path}.stats")
    return Benchmark(name=name, unit=UNIT, samples_ms={TIME_METRIC: to_ms([mean], UNIT, f"{path}.stats")},
                     steps_kept=False)
