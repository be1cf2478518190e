"""The per-run audit at report time, for runs the worker stored without one.

The bench worker audits every run when it finishes (``orchestrator.worker.run_audit``) and stores
the verdict as its status, with ``audited`` true; reports read that status as it is. Rows written
before the worker audited (``audited`` null) get the same row checks here, against the sweep
record's side when one is given. A run failing them counts as ``audit_failed``: reports list it with
the failures and keep its numbers out of every median and gate.
"""

from __future__ import annotations

import pandas as pd

from orchestrator.contract import AUDIT_FAILED
from orchestrator.spec.record import SweepRecord
from orchestrator.worker.run_audit import AUDIT_INPUT_COLUMNS, audit_failure, audit_options, audit_row

__all__ = ["AUDIT_FAILED", "AUDIT_INPUT_COLUMNS", "apply_audit"]


def apply_audit(runs: pd.DataFrame, record: SweepRecord | None = None) -> pd.DataFrame:
    """``runs`` with every ok run not audited by its worker that fails its audit marked
    ``audit_failed`` (error: the reasons); without a ``record``, only the checks that need none.
    ``runs`` itself (no copy) when its worker audited every ok run."""
    if runs.empty or "status" not in runs:
        return runs
    stored = (runs["audited"].fillna(False).astype(bool) if "audited" in runs
              else pd.Series(False, index=runs.index))
    if not ((runs["status"] == "ok") & ~stored).any():  # every ok run audited by its worker: as they are
        return runs
    sides = {label: side.planned() for label, side in record.sides.items()} if record else {}
    spec = record.spec if record else None
    options = (audit_options(spec.audit_modules or [], spec.protocol.value, spec.command) if spec
               else audit_options([], None, None))
    audited = runs.copy()
    for index, run in audited[(audited["status"] == "ok") & ~stored].iterrows():
        reasons = audit_row(run.to_dict(), sides.get(run.get("side")), **options)
        if reasons:
            audited.loc[index, "status"] = AUDIT_FAILED
            audited.loc[index, "error"] = audit_failure(reasons)
    return audited
