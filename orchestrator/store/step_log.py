"""A run's step records as they arrive, in bounded memory.

The steps go into long-format rows (``step, warmup, phase, ms``: the steps table of docs/design.md,
"Results"); every ``ROW_GROUP_ROWS`` rows are written to a Parquet spool file as one row group, so a
worker holds at most one row group of a run however many steps its bench reports. What the run's row,
its disturbance columns and its audit need of the steps is kept as they pass: how many there were and
how many measured, the least time the measured steps can have taken (each one lasts at least its
longest phase), and the CV of the measured steps' time (the whole-step phase where the bench reports
one in every measured step, else the sum of its top-level phases; Welford's running variance). A step's
CPU time (``capabilities.CPU_PHASES``) is a figure of the step, not a part of its wall time (a step on
several threads uses more CPU than wall time): neither counts. The steps file is the spool, finished
and moved into place (``move_spool``), or, when the rows never filled a row group, the rows written at
once (``table``).
"""

from __future__ import annotations

import math
import os
import shutil
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from orchestrator.capabilities import CPU_PHASES
from orchestrator.contract import StepRecord
from orchestrator.spec.results_format import with_version

ROW_GROUP_ROWS = 65_536  # (step, phase) rows held in memory before they go to the spool
STEP_PHASES: tuple[str, ...] = ("collector_step_ms", "env_step_ms")  # the whole step, where a bench has it
STEPS_SCHEMA = pa.schema([("sweep_id", pa.string()), ("run_key", pa.string()), ("step", pa.int64()),
                          ("warmup", pa.bool_()), ("phase", pa.string()), ("ms", pa.float64())])
# Every results file (store.parquet): on one-row files, column statistics and the embedded Arrow schema
# only bloat the footer (they are most of its size) and make reading many runs several times slower;
# Parquet's own logical types already give back the same Arrow types (UTC timestamps included).
WRITE_OPTIONS = {"write_statistics": False, "store_schema": False}


@dataclass
class _Running:
    """Welford's running mean and variance of one series."""

    n: int = 0
    mean: float = 0.0
    m2: float = 0.0

    def add(self, value: float) -> None:
        self.n += 1
        delta = value - self.mean
        self.mean += delta / self.n
        self.m2 += delta * (value - self.mean)

    def cv(self) -> float | None:
        """Sample standard deviation over the mean; None below 2 values or for a mean <= 0."""
        if self.n < 2 or not self.mean > 0:
            return None
        return math.sqrt(self.m2 / (self.n - 1)) / self.mean


class StepLog:
    """The steps of one run (see the module docstring). ``spool``: where row groups of the run
    ``sweep_id``/``run_key`` go (its directory must exist once the first one fills); None keeps every
    row in memory."""

    def __init__(self, records: Iterable[StepRecord] = (), *, spool: Path | None = None,
                 sweep_id: str = "", run_key: str = "") -> None:
        self.spool, self.sweep_id, self.run_key = spool, sweep_id, run_key
        self._writer: pq.ParquetWriter | None = None
        self._reset()
        for record in records:
            self.append(record)

    def _reset(self) -> None:
        self._rows: tuple[list, list, list, list] = ([], [], [], [])  # step, warmup, phase, ms
        self.count = 0  # steps, warm-up included
        self.measured = 0  # steps outside the warm-up
        self.last: StepRecord | None = None
        self.longest_phase_ms = 0.0  # summed over the measured steps: each step's longest phase
        self._whole = {name: _Running() for name in STEP_PHASES}  # while every measured step has it
        self._top_level = _Running()  # the sum of each measured step's phases without a dot

    def __len__(self) -> int:
        return self.count

    def __iter__(self) -> Iterator[StepRecord]:
        """The steps whose rows are held in memory, in order (a spooled log's earlier ones are in its
        spool; a step without a phase has no row)."""
        steps, warmups, phases, values = self._rows
        current: StepRecord | None = None
        for step, warmup, phase, ms in zip(steps, warmups, phases, values, strict=True):
            if current is None or current.step != step:
                if current is not None:
                    yield current
                current = StepRecord(step=step, warmup=warmup, phases={})
            current.phases[phase] = ms
        if current is not None:
            yield current

    def append(self, record: StepRecord) -> None:
        """Take one step (its phases become rows; a full row group goes to the spool)."""
        steps, warmups, phases, values = self._rows
        for name, ms in record.phases.items():
            steps.append(record.step)
            warmups.append(record.warmup)
            phases.append(sys.intern(name))
            values.append(ms)
        self.count += 1
        self.last = record
        if not record.warmup:
            self._measure(record.phases)
        if self.spool is not None and len(values) >= ROW_GROUP_ROWS:
            self._flush()

    def _measure(self, phases: dict[str, float]) -> None:
        self.measured += 1
        walls = {name: ms for name, ms in phases.items() if name not in CPU_PHASES}
        self.longest_phase_ms += max(walls.values(), default=0.0)
        for name in list(self._whole):
            if name in walls:
                self._whole[name].add(walls[name])
            else:
                del self._whole[name]
        self._top_level.add(sum(ms for name, ms in walls.items() if "." not in name))

    def step_cv(self) -> float | None:
        """CV (std / mean) of the measured steps' time; None with fewer than 2 measured steps."""
        if self.measured < 2:
            return None
        whole = next(iter(self._whole.values()), None)
        return (whole or self._top_level).cv()

    @property
    def spooled(self) -> bool:
        """Whether some rows went to the spool (the steps file is then ``move_spool``'s)."""
        return self._writer is not None

    def table(self, sweep_id: str, run_key: str) -> pa.Table:
        """The rows held in memory (all of them unless some went to the spool) as a steps table of the
        run ``sweep_id``/``run_key``."""
        steps, warmups, phases, values = self._rows
        n = len(steps)
        return pa.table([pa.array([sweep_id] * n, pa.string()), pa.array([run_key] * n, pa.string()),
                         pa.array(steps, pa.int64()), pa.array(warmups, pa.bool_()),
                         pa.array(phases, pa.string()), pa.array(values, pa.float64())], schema=STEPS_SCHEMA)

    def _flush(self) -> None:
        """The rows held in memory, as one row group of the spool."""
        if self._writer is None:
            assert self.spool is not None
            self._writer = pq.ParquetWriter(str(self.spool), STEPS_SCHEMA, **WRITE_OPTIONS)
            self._writer.add_key_value_metadata(with_version())
        self._writer.write_table(self.table(self.sweep_id, self.run_key))
        self._rows = ([], [], [], [])

    def move_spool(self, path: Path) -> None:
        """The spool, its last rows added and finished, moved to ``path`` (copied across file systems);
        the spool file is gone afterwards whatever happened."""
        try:
            if self._rows[0]:
                self._flush()
            assert self._writer is not None and self.spool is not None
            self._writer.close()
            if os.stat(self.spool).st_dev == os.stat(path.parent).st_dev:
                os.replace(self.spool, path)
            else:
                shutil.copyfile(self.spool, path)
        finally:
            self._drop_spool()

    def discard(self) -> None:
        """Forget every step (the spool file too): the run keeps none."""
        self._drop_spool()
        self._reset()

    def _drop_spool(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        if self.spool is not None:
            self.spool.unlink(missing_ok=True)
