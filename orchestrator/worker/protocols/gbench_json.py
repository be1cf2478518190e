"""Protocol gbench: the JSON Google Benchmark writes with ``--benchmark_format=json`` (to stdout) or
``--benchmark_out={result} --benchmark_out_format=json``.

Each ``run_type: iteration`` entry is one repetition: its ``real_time`` (``time_ms``) and ``cpu_time``
(``cpu_time_ms``) per iteration, in its ``time_unit``, are one sample each, grouped by ``run_name``.
Aggregate entries (``_mean``, ``_median``, ``_stddev``, ``_cv``, BigO, RMS) repeat what the
repetitions say and are not counted again; only a benchmark reported by its aggregates alone
(``--benchmark_report_aggregates_only``) takes its ``mean`` aggregate as its one value, with no step
rows. ``NaN`` and ``Infinity`` tokens, which Google Benchmark writes for such values, parse; a time
that is one fails the run, a user counter that is one is ignored. A benchmark skipped with an error
(``error_occurred`` / ``skipped``) is a case that did not run.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from orchestrator.capabilities import CPU_TIME_METRIC, TIME_METRIC
from orchestrator.worker.protocols.json_stream import KEEP
from orchestrator.worker.protocols.samples import Samples
from orchestrator.worker.protocols.suite import (
    Benchmark,
    SuiteFormatError,
    SuiteReader,
    get_list,
    get_number,
    get_object,
    get_text,
    ms_per,
)

_TIMES = ((TIME_METRIC, "real_time"), (CPU_TIME_METRIC, "cpu_time"))
_READ = ("name", "run_name", "run_type", "aggregate_name", "time_unit", "real_time", "cpu_time",
         "error_occurred", "skipped", "error_message", "skip_message")  # of each entry; counters are not


class GbenchReader(SuiteReader):
    protocol = "gbench"
    tool = "gbench"
    shape = {"context": {"library_version": KEEP}, "benchmarks": [dict.fromkeys(_READ, KEEP)]}
    write_less = ("Google Benchmark writes an entry per repetition: fewer with a lower "
                  "--benchmark_repetitions, or --benchmark_report_aggregates_only=true")

    def parse(self, document: object) -> tuple[list[Benchmark], dict]:
        context = get_object(document, "context", "")
        found: dict[str, _Found] = {}
        for i, entry in enumerate(get_list(document, "benchmarks", "")):
            path = f"benchmarks.{i}"
            name = get_text(entry, "name", path)
            run_name = get_text(entry, "run_name", path, default=name)
            _collect(found.setdefault(run_name, _Found(self.steps_limit)), entry, path)
        versions = {"benchmark": context["library_version"]} if isinstance(
            context.get("library_version"), str) else {}
        return [found[name].benchmark(name) for name in found], {"tool": self.tool, "versions": versions}


@dataclass
class _Found:
    """What the entries of one ``run_name`` said so far (times in ms)."""

    limit: int
    unit: str | None = None
    samples: dict[str, Samples] = field(default_factory=dict)
    mean: dict[str, float] | None = None  # the mean aggregate, when there is one
    error: str | None = None

    def benchmark(self, name: str) -> Benchmark:
        if self.error is not None:
            return Benchmark(name=name, unit=self.unit or "", error=self.error)
        if self.samples:
            return Benchmark(name=name, unit=self.unit or "", samples=self.samples)
        if self.mean is not None:
            return Benchmark(name=name, unit=self.unit or "", steps_kept=False,
                             samples={metric: Samples.of([value]) for metric, value in self.mean.items()})
        raise SuiteFormatError("benchmarks", f"benchmark {name!r} has neither repetitions nor a mean "
                                             "aggregate")


def _collect(found: _Found, entry: dict, path: str) -> None:
    if entry.get("error_occurred") or entry.get("skipped"):
        message = entry.get("error_message", entry.get("skip_message"))
        found.error = message if isinstance(message, str) and message else "skipped"
        return
    run_type = get_text(entry, "run_type", path, default="iteration")
    if run_type == "aggregate" and get_text(entry, "aggregate_name", path) != "mean":
        return  # median, stddev, cv, BigO, RMS: derived from the repetitions
    if run_type not in ("iteration", "aggregate"):
        raise SuiteFormatError(f"{path}.run_type", f"is {run_type!r}, not 'iteration' or 'aggregate'")
    unit = get_text(entry, "time_unit", path)
    if found.unit not in (None, unit):
        raise SuiteFormatError(f"{path}.time_unit", f"is {unit!r}, but earlier entries of its benchmark said "
                                                    f"{found.unit!r}")
    found.unit = unit
    times = {metric: get_number(entry, key, path) for metric, key in _TIMES}
    scale = ms_per(unit, f"{path}.time_unit")
    if run_type == "iteration":
        for metric, value in times.items():
            found.samples.setdefault(metric, Samples(found.limit)).add(value * scale)
    else:
        found.mean = {metric: value * scale for metric, value in times.items()}
