"""What a sweep record says as a sweep moves on: created for dispatch, resumed, aborted.

The file itself (paths, ids, locks, atomic writes) is ``orchestrator.store.records``' job.
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orchestrator.plan.integrity import with_digest
from orchestrator.spec.load import spec_to_dict

if TYPE_CHECKING:
    from orchestrator.plan.expand import ResolvedSweep

CLIENT_GONE = "stopped (client gone)"  # a record left "running" by a client that was killed


def new_record(resolved: ResolvedSweep, sweep_id: str, created: datetime, planned_runs: int
               ) -> dict[str, Any]:
    """The record of a sweep about to be dispatched: validated spec, resolved SHAs, status ``running``,
    and the digest ``--resume`` checks (``plan.integrity``)."""
    return with_digest({
        "sweep_id": sweep_id, "created": created.astimezone(UTC).isoformat(timespec="seconds"),
        "status": "running", "repo": str(resolved.repo), "results_root": str(resolved.results_root),
        "planned_runs": planned_runs, "spec": spec_to_dict(resolved.spec), "sides": record_sides(resolved),
        "host": None,
        "sweep_dir": str(resolved.sweep_dir) if resolved.sweep_dir is not None else None,
        "client_token": secrets.token_hex(16),
    })


def record_sides(resolved: ResolvedSweep) -> dict[str, dict[str, Any]]:
    """Each side as the record keeps it: its ref, SHA, variant, params and env."""
    return {label: {"ref": side.ref, "sha": resolved.shas[label], "variant": settings.variant,
                    "params": settings.params, "env": settings.env}
            for label, side in resolved.spec.sides.items()
            for settings in [resolved.settings[label]]}


def resumed(record: dict[str, Any], results_root: Path, now: datetime) -> dict[str, Any]:
    """``record`` of a sweep dispatched again by ``--resume`` at ``now``, writing to ``results_root``."""
    return {**record, "status": "running", "results_root": str(results_root),
            "resumed": [*record.get("resumed", []), now.astimezone(UTC).isoformat(timespec="seconds")]}


def current_status(record: dict[str, Any], client_alive: bool) -> str:
    """The record's status, but ``CLIENT_GONE`` for a ``running`` record whose client no longer holds
    the sweep's lock (``store.records.client_alive``): killed before it could record anything more."""
    status = str(record.get("status", "?"))
    return CLIENT_GONE if status == "running" and not client_alive else status


def aborted(record: dict[str, Any], reason: str) -> dict[str, Any]:
    """``record`` marked as aborted by an error in the client (nothing more is known)."""
    return {**record, "status": "aborted", "stopped_reason": reason,
            "ended": datetime.now(UTC).isoformat(timespec="seconds")}
