"""Protocol json: the bench writes one JSON document to ``{result}``; the sweep's ``json`` block says
where its numbers are (dotted paths, integer parts index lists).

A path leading to a number gives the run's mean; one leading to a list of numbers gives the per-step
samples of the measured window (step rows) and their mean. Anything else fails the run, naming the
key, the path and what was there; a failed run keeps no number of the document. The document is
read whole, so it may hold at most the sweep's ``max_result_mib`` (default ``WHOLE_MAX_RESULT_MIB``),
which is watched while the bench runs (``wait_for_exit``).
"""

from __future__ import annotations

import json
import math
import os
import stat
import time
from pathlib import Path
from statistics import fmean

from orchestrator.contract import PlannedRun, StepRecord
from orchestrator.worker.protocols import BenchReader, OnStep, Start, StopSignal, too_many_steps
from orchestrator.worker.protocols.json_stream import DocumentError, read_whole

WHOLE_MAX_RESULT_MIB = 64  # the default max_result_mib of a document read whole
WRITE_LESS = "have the bench write less"
POLL_S = 0.05


class JsonPathError(ValueError):
    """A dotted path that does not lead to a number or a list of numbers."""


class JsonDocReader(BenchReader):
    """Waits for the command, then reads and maps ``{result}``."""

    protocol = "json"

    @property
    def max_result_bytes(self) -> int:
        return result_cap(self.run, WHOLE_MAX_RESULT_MIB)

    def execute(self, start: Start, stop: StopSignal, on_step: OnStep) -> str | None:
        return wait_for_exit(start, stop, self.result_path, self.max_result_bytes, WRITE_LESS)

    def complete(self) -> str | None:
        try:
            document = read_whole(self.result_path, self.max_result_bytes)
            self.summary, steps = map_document(document, self.run.json_mapping)
            versions = versions_of(document, self.run.json_mapping.get("versions"))
        except DocumentError as exc:
            return str(exc)
        except JsonPathError as exc:
            self.summary = None
            return f"result document {self.result_path}: {exc}"
        if (too_many := too_many_steps(self.run, len(steps))) is not None:
            self.summary = None
            return f"result document {self.result_path}: {too_many}"
        for step in steps:
            self.steps.append(step)
        self.header = {"audit": {"versions": versions}} if versions is not None else None
        return None


def result_cap(run: PlannedRun, default_mib: int) -> int:
    """The most bytes ``run``'s result document may hold: the sweep's ``max_result_mib``, else
    ``default_mib``."""
    return (run.max_result_mib or default_mib) * 2**20


def wait_for_exit(start: Start, stop: StopSignal, result: Path, max_bytes: int,
                  write_less: str) -> str | None:
    """Start the command and wait for it to exit (or for ``stop``): nothing is read while it runs, but
    a ``result`` document growing past ``max_bytes`` stops the bench at once; why, saying how to
    avoid it (``write_less``, the tool's own option), or None."""
    proc = start()
    while not stop.should_stop(proc):
        if (size := _regular_size(result)) > max_bytes:
            return (f"result document {result} grew past max_result_mib={max_bytes // 2**20} while the bench "
                    f"ran ({size / 2**20:.0f} MiB): stopped the bench; {write_less}, or raise the sweep key "
                    "max_result_mib")
        time.sleep(POLL_S)
    return None


def _regular_size(path: Path) -> int:
    """The size of ``path`` when it is a regular file (not followed), else 0."""
    try:
        status = os.lstat(path)
    except OSError:
        return 0
    return status.st_size if stat.S_ISREG(status.st_mode) else 0


def map_document(document: object, mapping: dict) -> tuple[dict, list[StepRecord]]:
    """(summary, steps) of ``document`` under ``mapping`` (``throughput`` where it maps one, ``phases``,
    ``metrics``, and ``measure_wall_s``, the measured window in seconds, where it names one)."""
    path = mapping.get("throughput")
    throughput = None if path is None else _mean(number_at(document, path, "json.throughput"))
    phases = {name: number_at(document, path, f"json.phases.{name}")
              for name, path in (mapping.get("phases") or {}).items()}
    metrics = {name: _mean(number_at(document, path, f"json.metrics.{name}"))
               for name, path in (mapping.get("metrics") or {}).items()}
    steps = [StepRecord(step=i, warmup=False,
                        phases={name: values[i] for name, values in phases.items()
                                if isinstance(values, list) and i < len(values)})
             for i in range(max((len(v) for v in phases.values() if isinstance(v, list)), default=0))]
    summary = {"throughput": throughput, "phase_means_ms": {name: _mean(v) for name, v in phases.items()},
               "metrics": metrics}
    if mapping.get("measure_wall_s"):
        summary["measure_wall_s"] = number(document, mapping["measure_wall_s"], "json.measure_wall_s")
    return summary, steps


def number(document: object, path: str, key: str) -> float:
    """The number at dotted ``path``; ``JsonPathError`` naming ``key`` for anything else."""
    value = number_at(document, path, key)
    if isinstance(value, list):
        raise JsonPathError(f"{key}: {path!r} is a list of {len(value)}, not a number")
    return value


def versions_of(document: object, path: str | None) -> dict[str, str] | None:
    """The ``{package: version}`` object at ``path`` (``json.versions``), values as text."""
    if path is None:
        return None
    node = walk(document, path, "json.versions")
    if not isinstance(node, dict):
        raise JsonPathError(f"json.versions: {path!r} is {_describe(node)}, not an object")
    return {str(k): str(v) for k, v in node.items()}


def number_at(document: object, path: str, key: str) -> float | list[float]:
    """The number or list of numbers at dotted ``path``; ``JsonPathError`` naming ``key`` otherwise."""
    node = walk(document, path, key)
    if _is_number(node):
        return float(node)
    if isinstance(node, list) and node and all(_is_number(v) for v in node):
        return [float(v) for v in node]
    raise JsonPathError(f"{key}: {path!r} is {_describe(node)}, not a number or a non-empty list of numbers")


def walk(document: object, path: str, key: str) -> object:
    """The value at dotted ``path`` (integer parts index lists); ``JsonPathError`` naming ``key``."""
    node = document
    walked: list[str] = []
    for part in path.split("."):
        if isinstance(node, dict):
            if part not in node:
                raise JsonPathError(f"{key}: {path!r} has no {part!r} at {_where(walked)} "
                                    f"(there: {_describe(node)})")
            node = node[part]
        elif isinstance(node, list):
            if not part.isdigit() or int(part) >= len(node):
                raise JsonPathError(f"{key}: {path!r} needs a list index < {len(node)} at {_where(walked)}, "
                                    f"got {part!r}")
            node = node[int(part)]
        else:
            raise JsonPathError(f"{key}: {path!r} reaches {_describe(node)} at {_where(walked)}, "
                                f"which has no {part!r}")
        walked.append(part)
    return node


def _mean(value: float | list[float]) -> float:
    return fmean(value) if isinstance(value, list) else value


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _where(walked: list[str]) -> str:
    return repr(".".join(walked)) if walked else "the top"


def _describe(node: object) -> str:
    """A short account of a JSON value for an error message."""
    if isinstance(node, dict):
        keys = ", ".join(map(str, list(node)[:8])) + (", ..." if len(node) > 8 else "")
        return f"an object with keys {keys}" if node else "an empty object"
    if isinstance(node, list):
        return f"a list of {len(node)}" + (f" starting {json.dumps(node[0])[:40]}" if node else "")
    return f"{type(node).__name__} {json.dumps(node)[:60]}" if node is not None else "null"
