"""What ``shasweep site`` reads of a results root: the sweeps that changed since the last build (their
records, measured runs and gates' decided intervals, a few dozen sweeps at a time, so memory follows
a chunk and not the root) and the bisect records.

A record that cannot be read makes its sweep *damaged* (named on the index) but its runs are still
shown; a runs file that cannot be read is skipped by the read layer and named from the index
(``store.query.damaged_files``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from orchestrator.analysis.site_runs import (
    computed_gate_rows,
    document_gate_rows,
    plain_text,
    read_schema,
    series_rows,
)
from orchestrator.analysis.site_sweeps import BisectInfo, SweepInfo
from orchestrator.errors import InvalidInputError
from orchestrator.spec.record import SweepRecord
from orchestrator.store import query, records
from orchestrator.store.bisects import bisect_dir, read_bisect
from orchestrator.store.partitions import partition_dir
from orchestrator.store.site_state import VERDICTS_SUFFIX, read_verdicts

CHUNK_SWEEPS = 50  # sweeps read at once


@dataclass
class SweepsRead:
    """The changed sweeps as read: what the site knows of each, their series and gate rows, and the
    records that could not be read (sweep id -> why)."""

    infos: dict[str, SweepInfo] = field(default_factory=dict)
    series: list[pd.DataFrame] = field(default_factory=list)
    gates: list[dict] = field(default_factory=list)
    unreadable: dict[str, str] = field(default_factory=dict)


def sweep_records(root: Path, sweep_ids: Iterable[str]) -> tuple[dict[str, SweepRecord], dict[str, str]]:
    """The records of ``sweep_ids`` that can be read, and why each other one cannot."""
    found, unreadable = {}, {}
    for sweep_id in sweep_ids:
        try:
            found[sweep_id] = records.read_record(root, sweep_id)
        except InvalidInputError as exc:  # UnknownSweepError too: missing, not JSON, of another shape
            if records.record_path(root, sweep_id).exists():
                unreadable[sweep_id] = str(exc)
    return found, unreadable


def read_sweeps(root: Path, sweep_ids: list[str], metrics: list[str],
                known: dict[str, SweepRecord]) -> SweepsRead:
    """The series and gate rows of ``sweep_ids`` (``known``: their readable records)."""
    read = SweepsRead()
    schema = read_schema(metrics)
    for start in range(0, len(sweep_ids), CHUNK_SWEEPS):
        chunk = sweep_ids[start:start + CHUNK_SWEEPS]
        with_runs = [s for s in chunk if partition_dir(root, "runs", s).is_dir()]
        runs = plain_text(query.read_runs(root, query.Where(sweeps=with_runs), schema)) if with_runs else None
        if runs is not None and len(runs):
            read.series.append(series_rows(runs, metrics))
        groups = dict(tuple(runs.groupby("sweep_id", sort=False))) if runs is not None and len(runs) else {}
        for sweep_id in chunk:
            mine = groups.get(sweep_id)
            record = known.get(sweep_id)
            if record is not None:
                read.gates += _gates(root, record, mine)
    return read


def _gates(root: Path, record: SweepRecord, runs: pd.DataFrame | None) -> list[dict]:
    """The sweep's gate rows: its ``verdicts.json`` where that is current, else decided from its runs."""
    if _verdicts_current(root, record.sweep_id):
        rows = document_gate_rows(record.sweep_id, read_verdicts(root, record.sweep_id))
        if rows is not None:
            return rows
    if runs is None or not record.spec.gates:
        return []
    return computed_gate_rows(record, runs)


def _verdicts_current(root: Path, sweep_id: str) -> bool:
    """Whether the sweep's ``verdicts.json`` was written after its runs and its record last changed."""
    try:
        written = (root / "reports" / f"{sweep_id}{VERDICTS_SUFFIX}").stat().st_mtime_ns
        changed = [records.record_path(root, sweep_id).stat().st_mtime_ns]
        changed += [partition_dir(root, "runs", sweep_id).stat().st_mtime_ns]
    except OSError:
        return False
    return written >= max(changed)


def bisect_infos(root: Path) -> list[BisectInfo]:
    """Every readable bisect record, by id."""
    infos = []
    for path in sorted(bisect_dir(root).glob("[!.]*.json")):
        try:
            info = BisectInfo.of_document(path.stem, read_bisect(root, path.stem))
        except InvalidInputError:
            continue
        if info is not None:
            infos.append(info)
    return infos
