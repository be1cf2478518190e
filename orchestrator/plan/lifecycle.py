"""What a sweep record says as a sweep moves on: created for dispatch, resumed, aborted.

The record's shape is ``spec.record.SweepRecord``; the file itself (paths, ids, locks, atomic
writes) is ``orchestrator.store.records``' job.
"""

from __future__ import annotations

import secrets
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from orchestrator.plan.integrity import with_digest
from orchestrator.spec.record import SideRecord, SweepRecord

if TYPE_CHECKING:
    from orchestrator.plan.expand import ResolvedSweep


def new_record(resolved: ResolvedSweep, sweep_id: str, created: datetime, planned_runs: int,
               sequence: int | None = None) -> SweepRecord:
    """The record of a sweep about to be dispatched: validated spec, resolved SHAs, status ``running``,
    its creation number (``sequence``) and the digest ``--resume`` checks (``plan.integrity``)."""
    sides = {label: SideRecord(ref=side.ref, sha=resolved.shas[label], variant=settings.variant,
                               params=settings.params, env=settings.env)
             for label, side in resolved.spec.sides.items()
             for settings in [resolved.settings[label]]}
    return with_digest(SweepRecord(
        sweep_id=sweep_id, created=_timestamp(created), sequence=sequence, status="running",
        repo=str(resolved.repo),
        results_root=str(resolved.results_root), planned_runs=planned_runs, spec=resolved.spec, sides=sides,
        sweep_dir=str(resolved.sweep_dir) if resolved.sweep_dir is not None else None,
        client_token=secrets.token_hex(16)))


def resumed(record: SweepRecord, results_root: Path, now: datetime) -> SweepRecord:
    """``record`` (its digest checked) of a sweep dispatched again by ``--resume`` at ``now``, writing to
    ``results_root``; its digest is that of the record as today's shasweep writes it."""
    return with_digest(replace(record, status="running", results_root=str(results_root),
                               resumed=(*record.resumed, _timestamp(now))))


def aborted(record: SweepRecord, reason: str) -> SweepRecord:
    """``record`` marked as aborted by an error in the client (nothing more is known)."""
    return replace(record, status="aborted", stopped_reason=reason, ended=_timestamp(datetime.now(UTC)))


def _timestamp(when: datetime) -> str:
    return when.astimezone(UTC).isoformat(timespec="seconds")
