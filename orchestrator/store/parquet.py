"""Writing one run's results as Parquet (docs/design.md, "Results"); ``store.query`` reads them.

``results/runs/sweep=<id>/<run_key>.parquet`` holds one row per run, ``results/steps/...`` the
per-step phase timings in long format. Files are written under a dot-prefixed temporary name
(ignored by pyarrow and pandas), fsynced and renamed into place (``store.atomic``), the steps file
before the runs file, so a reader never sees half a run, a runs row always has its steps, and a
re-run of the same ``run_key`` replaces the earlier files.
"""

from __future__ import annotations

import json
import time
import typing
from dataclasses import dataclass, fields
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from orchestrator.contract import (
    HostRecord,
    PlannedRun,
    RunResult,
    StepSource,
    summary_metrics,
    summary_phase_means,
)
from orchestrator.spec.commands import passes_variant
from orchestrator.spec.results_format import FORMAT_VERSION, RECORD_KEY, with_version
from orchestrator.store.atomic import move_file, remove_stale_temps, staged, stale_temps, write_in_order
from orchestrator.store.step_log import WRITE_OPTIONS, StepLog

# A runs file holds the columns its run has: the plan's and the worker's (null when unknown), those
# that apply to the run only where they do, and what the bench reported (each phase mean, each metric,
# each key of its header audit), so a foreign bench's rows carry nothing of envruntime's
# (docs/design.md, "Results", the runs columns).
_PLAN_STRINGS: tuple[str, ...] = ("sweep_id", "run_key", "side", "ref", "sha", "case")
_TIMESTAMP = pa.timestamp("us", tz="UTC")
# How the wait for a quiet host before the run ended (worker.quiet); only with a quiet: key.
QUIET_COLUMNS: dict[str, pa.DataType] = {"quiet_wait_s": pa.float64(), "quiet_load": pa.float64(),
                                         "quiet_steal": pa.float64(), "quiet_met": pa.bool_()}
# A run's own one-row file: a dictionary page per column only adds to it (and to the time to write it).
RUN_FILE_OPTIONS = {**WRITE_OPTIONS, "use_dictionary": False}
WRITE_BUFFER_BYTES = 2**20  # Arrow's file stream makes a system call per page; a buffer, one per file
_ARROW_TYPES: dict[object, pa.DataType] = {str: pa.string(), int: pa.int64(), float: pa.float64()}


@dataclass(frozen=True)
class RunFiles:
    """Where a run's two Parquet files landed."""

    runs: Path
    steps: Path


def runs_dir(results_root: str | Path, sweep_id: str) -> Path:
    return Path(results_root) / "runs" / f"sweep={sweep_id}"


def steps_dir(results_root: str | Path, sweep_id: str) -> Path:
    return Path(results_root) / "steps" / f"sweep={sweep_id}"


def run_files(run: PlannedRun) -> RunFiles:
    """Where ``run``'s two files go."""
    return RunFiles(runs=runs_dir(run.results_root, run.sweep_id) / f"{run.run_key}.parquet",
                    steps=steps_dir(run.results_root, run.sweep_id) / f"{run.run_key}.parquet")


def superseded_dir(results_root: str | Path, sweep_id: str) -> Path:
    """Where runs of a round that was redone on another host are kept (outside ``runs/``)."""
    return Path(results_root) / "superseded" / f"sweep={sweep_id}"


def remove_run(run: PlannedRun) -> None:
    """Remove ``run``'s files, if any: its runs file first, so a runs row never lacks its steps."""
    files = run_files(run)
    for path in (files.runs, files.steps):
        path.unlink(missing_ok=True)


def supersede_run(results_root: str | Path, sweep_id: str, run_key: str, tag: str) -> None:
    """Move both files of ``run_key`` (and of the cases read from it, when it is a suite run) out of
    the results into ``superseded_dir`` (named with ``tag``, e.g. the host that ran them), so a round
    redone elsewhere never mixes with them."""
    from orchestrator.store.query import with_suite_cases  # the read layer, which reads these files

    target = superseded_dir(results_root, sweep_id)
    for key in with_suite_cases(results_root, sweep_id, [run_key]):
        for kind, source in (("runs", runs_dir), ("steps", steps_dir)):
            path = source(results_root, sweep_id) / f"{key}.parquet"
            if path.exists():
                (target / kind).mkdir(parents=True, exist_ok=True)
                move_file(path, target / kind / f"{key}.{tag}.{time.time_ns()}.parquet")  # maybe across disks


def write_run(run: PlannedRun, result: RunResult) -> RunFiles:
    """Write both Parquet files of ``run`` as a pair (``store.atomic.write_in_order``): both staged,
    made durable by one barrier, then the steps file renamed into place, then the runs file. A
    failure before the renames leaves the earlier pair as it was."""
    files = run_files(run)
    row = run_table(run, result)
    write_in_order([(files.steps, lambda tmp: write_steps(run, result.steps, tmp)),
                    (files.runs, lambda tmp: write_table(row, tmp, RUN_FILE_OPTIONS))])
    return files


def write_steps(run: PlannedRun, steps: StepSource, path: Path) -> None:
    """``run``'s steps file at ``path``: its spool moved there, or its rows written."""
    log = steps if isinstance(steps, StepLog) else StepLog(steps)
    if log.spooled:
        log.move_spool(path)
    else:
        write_table(run_steps_table(run, log), path, WRITE_OPTIONS)


def write_table(table: pa.Table, path: Path, options: dict) -> None:
    """``table`` as Parquet at ``path`` through a buffered stream (``WRITE_BUFFER_BYTES``), its footer
    carrying this shasweep's format version (key-value metadata: the files store no Arrow schema)."""
    with (pa.output_stream(str(path), compression=None, buffer_size=WRITE_BUFFER_BYTES) as sink,
          pq.ParquetWriter(sink, table.schema, **options) as writer):
        writer.write_table(table)
        writer.add_key_value_metadata(with_version())


def run_table(run: PlannedRun, result: RunResult) -> pa.Table:
    """The one-row runs table of ``run``."""
    columns = run_columns(run, result)
    schema = pa.schema([(name, kind) for name, (_, kind) in columns.items()])
    return pa.Table.from_pylist([{name: value for name, (value, _) in columns.items()}], schema=schema)


def run_row(run: PlannedRun, result: RunResult) -> dict[str, object]:
    """The values ``run_table`` writes, as a plain mapping (what the worker's audit reads)."""
    return {name: value for name, (value, _) in run_columns(run, result).items()}


def run_columns(run: PlannedRun, result: RunResult) -> dict[str, tuple[object, pa.DataType]]:
    """Every column of ``run``'s row: its value and Arrow type; a column that does not apply to the
    run is left out (docs/design.md, "Results": a foreign bench's row has no variant, a run of a sweep
    that is not lockstep no blocks, ...)."""
    columns = _plan_columns(run)
    columns |= {
        "status": (result.status, pa.string()),
        "error": (result.error, pa.string()),
        "started_at": (result.started_at, _TIMESTAMP),
        "ended_at": (result.ended_at, _TIMESTAMP),
        "wall_s": (result.wall_s, pa.float64()),
        "throughput": (result.throughput, pa.float64()),
        "measure_wall_s": (result.measure_wall_s, pa.float64()),
        "exit_code": (result.exit_code, pa.int64()),
        "steps": (result.steps.measured, pa.int64()),
        "log_dir": (result.log_dir, pa.string()),
        "bench_user_s": (result.usage.user_s if result.usage else None, pa.float64()),
        "bench_sys_s": (result.usage.sys_s if result.usage else None, pa.float64()),
        "bench_max_rss_mib": (result.usage.max_rss_mib if result.usage else None, pa.float64()),
        "rss_source": (result.usage.rss_source if result.usage else None, pa.string()),
        "audited": (result.audited, pa.bool_()),
        "lock_wait_s": (result.lock_wait_s, pa.float64()),
    }
    columns |= _when_set({"suite_run_key": result.suite_run_key, "bad_input": result.bad_input})
    columns |= {"protocol": (run.protocol, pa.string()), "worktree": (result.worktree, pa.string()),
                "python": (run.python, pa.string())}  # the sweep's interpreter; null: the worker's own
    columns |= {name: (value, pa.float64()) for name, value in summary_phase_means(result.summary).items()}
    columns |= {name: (value, pa.float64()) for name, value in summary_metrics(result.summary).items()}
    columns |= {f"host_{name}": (getattr(result.host, name), kind) for name, kind in _host_types().items()}
    columns |= {f"audit_{name}": (value, pa.string())
                for name, value in flatten_audit((result.header or {}).get("audit")).items()}
    modules = None if result.audit_modules is None else json.dumps(result.audit_modules, sort_keys=True)
    columns |= _when_set({"audit_modules": modules})  # measured by the worker, never the bench's word
    columns |= {
        "params": (json.dumps(run.params, sort_keys=True), pa.string()),
        "env": (json.dumps(run.env, sort_keys=True), pa.string()),
        "pythonpath": (None if result.pythonpath is None else json.dumps(result.pythonpath), pa.string()),
        "command": (json.dumps(list(run.argv_template)), pa.string()),  # the argv template, placeholders kept
    }
    if result.ran_in is not None:  # a lockstep sweep's run
        blocks = None if result.blocks is None else json.dumps(result.blocks, allow_nan=False)  # JSON only
        columns |= {"ran_in": (result.ran_in, pa.string()),
                    "lockstep_fallback": (result.fallback, pa.string()), "blocks": (blocks, pa.string())}
    if result.quiet is not None:  # the sweep waits for a quiet host
        columns |= {name: (value, QUIET_COLUMNS[name]) for name, value in result.quiet.columns().items()}
    columns[RECORD_KEY] = (FORMAT_VERSION, pa.int64())  # the row's format (null: written before it)
    return columns


def _plan_columns(run: PlannedRun) -> dict[str, tuple[object, pa.DataType]]:
    """The columns the plan decides: identity and order; ``variant`` only where the command passes
    ``{variant}``, ``algo``/``task``/``sim`` only for a case of the form ``algo/task/sim``."""
    columns: dict[str, tuple[object, pa.DataType]] = {name: (getattr(run, name), pa.string())
                                                      for name in _PLAN_STRINGS}
    parts = {"algo": run.algo, "task": run.task, "sim": run.sim}
    if passes_variant(run.argv_template):
        parts["variant"] = run.variant
    return columns | _when_set(parts) | {"repeat": (run.repeat, pa.int64()), "order": (run.order, pa.int64())}


def _when_set(values: dict[str, str | None]) -> dict[str, tuple[object, pa.DataType]]:
    """The text columns of ``values`` that have a value."""
    return {name: (value, pa.string()) for name, value in values.items() if value is not None}


def run_steps_table(run: PlannedRun, steps: StepLog) -> pa.Table:
    """Long format: one row per (step, phase), of the rows ``steps`` holds in memory."""
    return steps.table(run.sweep_id, run.run_key)


def flatten_audit(audit: object) -> dict[str, str | None]:
    """Audit keys as strings: text kept, everything else (lists, nested dicts, numbers) as JSON."""
    audit = audit if isinstance(audit, dict) else {}
    flat: dict[str, str | None] = {}
    for name, value in audit.items():
        is_text = isinstance(value, str) or value is None
        flat[str(name)] = value if is_text else json.dumps(value, sort_keys=True)
    return flat


def _host_types() -> dict[str, pa.DataType]:
    """Arrow type of every host field, from ``HostRecord``'s annotations (None-able kept nullable)."""
    hints = typing.get_type_hints(HostRecord)
    types: dict[str, pa.DataType] = {}
    for f in fields(HostRecord):
        base = [t for t in typing.get_args(hints[f.name]) if t is not type(None)] or [hints[f.name]]
        types[f.name] = _ARROW_TYPES[base[0]]
    return types


def write_parquet_atomic(table: pa.Table, path: Path) -> None:
    """Write ``table`` to ``path`` via a dot-prefixed temporary file, fsync and a rename."""
    with staged(path) as tmp:
        write_table(table, tmp, WRITE_OPTIONS)


def _results_dirs(results_root: str | Path) -> list[Path]:
    """Every directory of a results root that files are written to."""
    root = Path(results_root)
    return [root / "sweeps", root / "reports", root / "index", root / "index" / "delta",
            *(p for kind in ("runs", "steps") for p in sorted((root / kind).glob("sweep=*")))]


def stale_results_temps(results_root: str | Path) -> list[Path]:
    """The stale temporary files of dead writers anywhere in the results root."""
    return [path for directory in _results_dirs(results_root) for path in stale_temps(directory)]


def remove_stale_results_temps(results_root: str | Path) -> list[Path]:
    """Remove the stale temporary files of dead writers anywhere in the results root; returns them."""
    return [path for directory in _results_dirs(results_root) for path in remove_stale_temps(directory)]
