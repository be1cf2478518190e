"""The per-run audit at report time, for runs the worker stored without one.

The bench worker audits every run when it finishes (``orchestrator.worker.run_audit``) and stores
the verdict as its status, with ``audited`` true; reports read that status as it is. Rows written
before the worker audited (``audited`` null) get the same row checks here, against the sweep
record's side when one is given. A run failing them counts as ``audit_failed``: reports list it with
the failures and keep its numbers out of every median and gate.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from orchestrator.contract import AUDIT_FAILED
from orchestrator.worker.run_audit import AUDIT_INPUT_COLUMNS, audit_failure, audit_options, audit_row

__all__ = ["AUDIT_FAILED", "AUDIT_INPUT_COLUMNS", "apply_audit"]


def apply_audit(runs: pd.DataFrame, record: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """``runs`` with every ok run not audited by its worker that fails its audit marked
    ``audit_failed`` (error: the reasons)."""
    if runs.empty or "status" not in runs:
        return runs
    sides = (record or {}).get("sides") or {}
    spec = (record or {}).get("spec") or {}
    options = audit_options(spec.get("audit_modules") or [], spec.get("protocol"), spec.get("command"))
    audited = runs.copy()
    stored = (audited["audited"].fillna(False).astype(bool) if "audited" in audited
              else pd.Series(False, index=audited.index))
    for index, run in audited[(audited["status"] == "ok") & ~stored].iterrows():
        reasons = audit_row(run.to_dict(), sides.get(run.get("side")), **options)
        if reasons:
            audited.loc[index, "status"] = AUDIT_FAILED
            audited.loc[index, "error"] = audit_failure(reasons)
    return audited
