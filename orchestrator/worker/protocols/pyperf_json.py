"""Protocol pyperf: the JSON file ``pyperf`` writes with ``-o {result}`` (file format version 1.0).

A benchmark's values are those of all its runs, i.e. of every worker process pyperf spawned, in
order; warm-up values and calibration runs (runs with no ``values``) are left out. pyperf stores each
value per inner-loop iteration already (the raw timing divided by ``loops * inner_loops``), so a value
is the time of one call; ``loops`` and ``inner_loops`` must be positive integers wherever given. The
unit is the ``unit`` metadata (a run's over its benchmark's over the file's, default ``second``, as
pyperf reads it); a ``byte`` or ``integer`` benchmark cannot be converted to ms. Only the metadata
and the values are read; the warm-ups are read past.
"""

from __future__ import annotations

from orchestrator.capabilities import TIME_METRIC
from orchestrator.worker.protocols.json_stream import KEEP
from orchestrator.worker.protocols.samples import Samples
from orchestrator.worker.protocols.suite import (
    Benchmark,
    SuiteFormatError,
    SuiteReader,
    get_list,
    get_object,
    get_text,
    ms_per,
    numbers,
)

FORMAT_VERSION = "1.0"
DEFAULT_UNIT = "second"


class PyperfReader(SuiteReader):
    protocol = "pyperf"
    tool = "pyperf"
    shape = {"version": KEEP, "metadata": KEEP,
             "benchmarks": [{"metadata": KEEP, "runs": [{"metadata": KEEP, "values": KEEP}]}]}
    write_less = "pyperf writes every value of every process: fewer with a lower --processes or --values"

    def parse(self, document: object) -> tuple[list[Benchmark], dict]:
        version = get_text(document, "version", "")
        if version != FORMAT_VERSION:
            raise SuiteFormatError("version", f"is pyperf file format {version!r}; this reader reads "
                                              f"{FORMAT_VERSION!r} (pyperf >= 1.0)")
        common = get_object(document, "metadata", "", optional=True)
        benchmarks = [_benchmark(entry, f"benchmarks.{i}", common, self.steps_limit)
                      for i, entry in enumerate(get_list(document, "benchmarks", ""))]
        versions = {name: str(common[key]) for name, key in (("pyperf", "perf_version"),
                                                             ("python", "python_version")) if key in common}
        return benchmarks, {"tool": self.tool, "versions": versions}


def _benchmark(entry: object, path: str, common: dict, limit: int) -> Benchmark:
    own = get_object(entry, "metadata", path, optional=True)
    name = get_text({**common, **own}, "name", f"{path}.metadata")
    samples = Samples(limit)
    units: dict[str, str] = {}  # unit -> where it was said, for the first run that has it
    for i, run in enumerate(get_list(entry, "runs", path)):
        where = f"{path}.runs.{i}"
        levels = (("metadata", common), (f"{path}.metadata", own),
                  (f"{where}.metadata", get_object(run, "metadata", where, optional=True)))
        metadata = {key: (value, f"{at}.{key}") for at, level in levels for key, value in level.items()}
        for key in ("loops", "inner_loops"):
            loops, at = metadata.get(key, (1, ""))
            if isinstance(loops, bool) or not isinstance(loops, int) or loops < 1:
                raise SuiteFormatError(at, f"is {loops!r}, not a positive integer")
        if "values" not in run:
            continue  # a calibration run: warm-ups only
        unit, at = metadata.get("unit", (DEFAULT_UNIT, f"{where}.metadata.unit"))
        if not isinstance(unit, str):
            raise SuiteFormatError(at, f"is {unit!r}, not a unit name")
        values = numbers(run["values"], f"{where}.values")
        ms_per(unit, at)
        units.setdefault(unit, at)
        samples.add_numbers(values)
    if not samples.count:
        raise SuiteFormatError(f"{path}.runs", f"benchmark {name!r} has no run with values")
    if len(units) > 1:
        raise SuiteFormatError(list(units.values())[-1], f"the runs of benchmark {name!r} disagree on "
                                                         f"the unit: {', '.join(units)}")
    unit = next(iter(units))
    return Benchmark(name=name, unit=unit, samples={TIME_METRIC: samples}, ms_per_unit=ms_per(unit, ""))
