"""Reusing a finished run in another sweep, so a measurement already made is not made again.

``shasweep bisect`` compares every commit it tests with the same good commit; each step is its own
sweep, but the good side's runs of earlier steps are the same measurements the step would make.
A run of an earlier sweep stands in for a planned run when it is ``ok`` and is the same
measurement: same SHA, case, variant, repeat, params, env, bench command and protocol, on the same
host. Its two Parquet files are copied under the planned run's sweep id, run key and order, with
``reused_from`` naming the original (``<sweep_id>/<run_key>``), so the new sweep's reports, gates
and ``--resume`` read it as one of their own ok runs and a reader can still tell that it was not
measured again (its ``started_at`` and ``wall_s`` stay those of the original).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds

from orchestrator.contract import Outcome, PlannedRun
from orchestrator.spec.commands import passes_variant
from orchestrator.store.atomic import write_in_order
from orchestrator.store.parquet import WRITE_OPTIONS, RunFiles, run_files, write_table
from orchestrator.store.query import Where, read_runs, runs_table, steps_table

# Readers across sweeps (drift, history, noise estimates) count a measurement once: a copy is not
# another sample. Files older than the column read it as null (measured).
REUSED_COLUMN = "reused_from"
MEASURED_FILTER = ds.field(REUSED_COLUMN).is_null()
Reuse = Callable[[PlannedRun, str], dict | None]  # (run, host id) -> outcome of an earlier run copied in


def measured_only(runs: pd.DataFrame) -> pd.DataFrame:
    """``runs`` without the copies ``RunPool.reuse`` made."""
    return runs[runs[REUSED_COLUMN].isna()] if REUSED_COLUMN in runs else runs


@dataclass
class RunPool:
    """The ok runs of ``sweep_ids`` (earlier sweeps under ``results_root``), offered to later sweeps."""

    results_root: Path
    sweep_ids: list[str]
    _runs: pd.DataFrame | None = field(default=None, repr=False)

    def reuse(self, run: PlannedRun, host_id: str) -> Outcome | None:
        """Copy the earliest run of the pool that is the same measurement as ``run`` on ``host_id``
        into ``run``'s sweep; the outcome the dispatcher records for ``run``, or None (run it)."""
        donor = self._match(run, host_id)
        if donor is None:
            return None
        earlier = donor.get("reused_from")  # the donor is itself a copy: name what was measured
        origin = earlier if isinstance(earlier, str) else f"{donor['sweep_id']}/{donor['run_key']}"
        files = copy_run(self.results_root, donor["sweep_id"], donor["run_key"], run, origin)
        return run.outcome(host_id=host_id, status="ok", throughput=donor.get("throughput"),
                           wall_s=donor.get("wall_s"), exit_code=donor.get("exit_code"),
                           runs_file=str(files.runs), steps_file=str(files.steps), reused_from=origin)

    def _match(self, run: PlannedRun, host_id: str) -> dict | None:
        runs = self._pool()
        if runs.empty:
            return None
        wanted = {"status": "ok", "sha": run.sha, "case": run.case,
                  **({"variant": run.variant} if passes_variant(run.argv_template) else {}),  # else none
                  "repeat": run.repeat, "params": json.dumps(run.params, sort_keys=True),
                  "env": json.dumps(run.env, sort_keys=True), "command": json.dumps(list(run.argv_template)),
                  "protocol": run.protocol, "host_id": host_id}
        same = pd.Series(True, index=runs.index)
        for column, value in wanted.items():
            same &= runs[column] == value if column in runs else False
        # the interpreter: null (or a row from before the column) is the worker's own
        same &= (runs["python"].fillna("") if "python" in runs else "") == (run.python or "")
        matches = runs[same & (runs["sweep_id"] != run.sweep_id)]
        return None if matches.empty else matches.iloc[0].to_dict()

    def _pool(self) -> pd.DataFrame:
        """Every run of the pool's sweeps, in their order (read once: the pool's sweeps are done)."""
        if self._runs is None:
            frames = [read_runs(self.results_root, Where(sweeps=[sweep_id])) for sweep_id in self.sweep_ids]
            frames = [frame for frame in frames if not frame.empty]
            self._runs = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
        return self._runs


def copy_run(results_root: Path, sweep_id: str, run_key: str, run: PlannedRun, origin: str) -> RunFiles:
    """Write run ``run_key`` of ``sweep_id`` as ``run`` (its sweep id, run key and order; ``reused_from``
    ``origin``), the steps file first as ``write_run`` does."""
    donor = Where(sweeps=[sweep_id], run_keys=[run_key])
    row, steps = runs_table(results_root, donor), steps_table(results_root, donor)
    row = _with_columns(row, {"sweep_id": (run.sweep_id, pa.string()), "run_key": (run.run_key, pa.string()),
                              "order": (run.order, pa.int64()),
                              "reused_from": (origin, pa.string())})
    steps = _with_columns(steps, {"sweep_id": (run.sweep_id, pa.string()),
                                  "run_key": (run.run_key, pa.string())})
    files = run_files(run)
    write_in_order([(files.steps, lambda tmp: write_table(steps, tmp, WRITE_OPTIONS)),
                    (files.runs, lambda tmp: write_table(row, tmp, WRITE_OPTIONS))])
    return files


def _with_columns(table: pa.Table, values: dict[str, tuple[object, pa.DataType]]) -> pa.Table:
    """``table`` with each named column set to one value on every row (replaced or appended)."""
    for name, (value, kind) in values.items():
        column = pa.array([value] * table.num_rows, kind)
        index = table.schema.get_field_index(name)
        table = table.set_column(index, name, column) if index >= 0 else table.append_column(name, column)
    return table
