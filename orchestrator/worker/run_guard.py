"""Every dispatched run gets its runs row, whatever failed on the worker.

``failed_result`` stands in for a run that broke before or around its bench (a read-only home, a
worktree that cannot be made, a stream record that crashes the parser). ``store_result`` writes the
run's files; if that fails (ENOSPC, a read-only results root), it tries once more with the smallest
row that says so (status ``failed``, no steps), so a full disk still leaves a record of the run.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from orchestrator.contract import NO_STEPS, HostRecord, PlannedRun, RunResult
from orchestrator.store.parquet import RunFiles, write_run
from orchestrator.worker.hostinfo import collect_host


def failed_result(error: str, log_dir: Path) -> RunResult:
    """A ``failed`` result with ``error`` and the host record, for a run whose bench never reported."""
    now = datetime.now(UTC)
    try:
        host = collect_host()
    except Exception:  # noqa: BLE001 - the host record is a nicety here, the row is not
        host = HostRecord()
    return RunResult(status="failed", error=error, started_at=now, ended_at=now, exit_code=None,
                     log_dir=str(log_dir), host=host)


def store_result(run: PlannedRun, result: RunResult) -> tuple[RunResult, RunFiles]:
    """Write ``result``; when that fails, write a failed row without steps naming the error.

    Returns the result as stored. Raises only if even the small row cannot be written.
    """
    try:
        return result, write_run(run, result)
    except (OSError, ValueError) as exc:
        result.steps.discard()
        reason = f"writing the run's results failed: {type(exc).__name__}: {exc}"
        error = f"{result.error}; {reason}" if result.error else reason
        small = replace(result, status="failed", error=error, steps=NO_STEPS)
        return small, write_run(run, small)
