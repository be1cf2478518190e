"""The sweep record is executable input: ``--resume`` runs its ``command``. So what a resume would run
(sweep id, repository, SHAs, the validated spec with its command, the number of runs) is hashed into
the record when it is written (``digest``), and the command into every run key; ``--resume`` refuses
a record whose digest is missing or does not match (exit 2).

This catches a record edited by hand or by a tool; it is no signature. Whoever may write a results
root may also recompute the digest, so a results root must be writable only by the people whose
code it may run (docs/operations.md, "Security").
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from typing import Any

from orchestrator.errors import InvalidInputError
from orchestrator.spec.record import SweepRecord

DIGEST_FIELDS: tuple[str, ...] = ("sweep_id", "repo", "planned_runs", "spec", "sides")


def record_digest(record: dict[str, Any]) -> str:
    """SHA-256 of the record's ``DIGEST_FIELDS`` in canonical JSON."""
    content = {name: record.get(name) for name in DIGEST_FIELDS}
    return hashlib.sha256(json.dumps(content, sort_keys=True, default=str).encode()).hexdigest()


def with_digest(record: SweepRecord) -> SweepRecord:
    """``record`` with the digest of what it says it would run, as it is written."""
    return replace(record, digest=record_digest(record.to_json()))


def check_digest(record: dict[str, Any]) -> None:
    """``InvalidInputError`` unless the record's ``digest`` matches what it says it would run (``record``:
    the file's JSON as written, whichever shasweep wrote it)."""
    digest = record.get("digest")
    if not isinstance(digest, str):
        raise InvalidInputError("the record has no digest (written by an older shasweep, or edited): "
                                "refusing to run its command", "digest")
    if digest != record_digest(record):
        raise InvalidInputError("the record was changed after shasweep wrote it (its spec, command, "
                                "repository or SHAs no longer match its digest): refusing to run it",
                                "digest")


def command_digest(command: list[str] | tuple[str, ...]) -> str:
    """A short hash of the bench command, part of every run key."""
    return hashlib.sha256(json.dumps(list(command)).encode()).hexdigest()[:16]
