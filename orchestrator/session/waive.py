"""``waive``: record (or revoke) an accepted exception to a gate in a sweep's record: the waiver is
checked to name real gate verdicts, then appended to the record's ``waivers`` log
(``analysis.waivers``)."""

from __future__ import annotations

import getpass
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from orchestrator.analysis.waivers import REVOKE, WAIVE, active_waivers, new_entry, waiver_log
from orchestrator.errors import InvalidInputError
from orchestrator.session.recorded import find_sweep
from orchestrator.spec.load import check_waiver
from orchestrator.spec.record import Waiver
from orchestrator.spec.schema import WaiverSpec
from orchestrator.store import records


@dataclass(frozen=True)
class RecordedWaiver:
    """The entry appended to sweep ``sweep_id``'s record under ``results_root``."""

    sweep_id: str
    results_root: Path
    entry: Waiver


def record_waiver(sweep_id: str, case: str, reason: str, *, side: str | None = None, gate: int | None = None,
                  by: str | None = None, revoke: bool = False, results_root: str | Path = "results",
                  cwd: Path | None = None) -> RecordedWaiver:
    """Accept the FAILs of ``case`` (only ``side``, only gate ``gate``: default every one) in sweep
    ``sweep_id`` (or ``latest``) for ``reason``, decided ``by`` (default: the login name); ``revoke``
    cancels the waivers in force of exactly this case, side and gate instead."""
    run = find_sweep(sweep_id, results_root, cwd=cwd)
    record = run.record()
    by = by or _login_name()
    check_waiver(WaiverSpec(case=case, reason=reason, side=side, gate=gate, by=by), record.spec, None)
    entry = new_entry(REVOKE if revoke else WAIVE, case, side, gate, reason, by, datetime.now(UTC))
    if revoke and not any(w.target == entry.target for w in active_waivers(waiver_log(record))):
        raise InvalidInputError(f"sweep {run.sweep_id!r} has no waiver in force for {entry.describe()} "
                                "to revoke")
    records.append_entry(run.results_root, run.sweep_id, "waivers", entry.to_dict())
    return RecordedWaiver(run.sweep_id, run.results_root, entry)


def _login_name() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no login name in the environment and no passwd entry
        return "unknown"
