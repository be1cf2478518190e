"""``list``: the recorded sweeps of a results root, newest first: each one's status (a ``running``
sweep whose client is gone is ``stopped (client gone)``), ok runs of the planned, and the verdict line
of its last report (``reports/<id>.verdicts.json``). Only the records shown are read, so a root of
thousands of sweeps lists as fast as a new one."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from orchestrator.errors import InvalidInputError
from orchestrator.plan import lifecycle
from orchestrator.session.recorded import locate_results, reports_dir
from orchestrator.spec.record import SweepRecord
from orchestrator.store import records

NOT_REPORTED = "(not reported)"
DEFAULT_SHOWN = 50


@dataclass(frozen=True)
class SweepRow:
    """What ``list`` shows of one sweep (an unreadable record is listed as such, never fatal)."""

    sweep_id: str
    created: str  # UTC, to the second: ``2026-01-01 12:00:00``
    status: str
    runs: str  # ok of planned: ``5/6`` (``?/6`` while no outcome is recorded)
    verdicts: str  # the verdict line of its last report


@dataclass(frozen=True)
class SweepListing:
    """The sweeps shown, newest first; ``earlier``: how many older ones were left out."""

    rows: list[SweepRow]
    earlier: int
    sweeps_dir: Path


def list_sweeps(results_root: str | Path = "results", *, last: int | None = DEFAULT_SHOWN,
                cwd: Path | None = None) -> SweepListing:
    """The latest ``last`` recorded sweeps (None: every one) under ``results_root``
    (``session.recorded.locate_results``), newest first."""
    root = locate_results(results_root, cwd=cwd)
    found = records.sweeps_by_creation(root)
    shown = found[:last]
    rows = [sweep_row(root, sweep_id, _record(root, sweep_id)) for sweep_id in shown]
    return SweepListing(rows, len(found) - len(shown), records.sweeps_dir(root))


def sweep_row(root: Path, sweep_id: str, record: SweepRecord | None) -> SweepRow:
    """One sweep's row; ``record`` None: unreadable."""
    if record is None:
        return SweepRow(sweep_id, "", "unreadable record", "-", NOT_REPORTED)
    ok = sum(o.status == "ok" for o in record.outcomes)
    runs = f"{ok}/{record.planned_runs}" if record.outcomes else f"?/{record.planned_runs}"
    status = lifecycle.current_status(record, records.client_alive(root, sweep_id))
    return SweepRow(sweep_id, record.created[:19].replace("T", " "), status, runs, _verdicts(root, sweep_id))


def _record(root: Path, sweep_id: str) -> SweepRecord | None:
    """The sweep's record; None when it is reserved, unreadable or of an unexpected shape."""
    try:
        return records.read_record(root, sweep_id)
    except (InvalidInputError, OSError):
        return None


def _verdicts(root: Path, sweep_id: str) -> str:
    """The verdict line of the sweep's last report."""
    try:
        document = json.loads((reports_dir(root) / f"{sweep_id}.verdicts.json").read_text(encoding="utf-8"))
        return str(document["verdict_line"])
    except (OSError, ValueError, KeyError, TypeError):
        return NOT_REPORTED
