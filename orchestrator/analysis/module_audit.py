"""The orchestrator-side module audit: each of the sweep's ``audit_modules`` must have been imported
from the SHA's worktree.

Reads the runs table's ``audit_modules`` (``{module: file}``, measured on the worker by
``orchestrator.worker.module_audit``, never reported by the bench) and ``worktree`` columns.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any


def module_reasons(run: Mapping[str, Any], modules: Sequence[str]) -> list[str]:
    """Why ``run`` fails the module audit for ``modules``; empty when it passes (or none is asked)."""
    if not modules:
        return []
    worktree = run.get("worktree")
    try:
        recorded = json.loads(run.get("audit_modules"))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        recorded = None
    if not isinstance(recorded, dict) or not isinstance(worktree, str):
        return ["audit_modules: where the bench imported its modules from was not recorded"]
    reasons = []
    for name in modules:
        files = recorded.get(name)
        if files is None:
            reasons.append(f"module {name} was never imported by the bench")
            continue
        files = files if isinstance(files, list) else [files]
        outside = [f for f in files if not _inside(str(f), worktree)]
        if outside:
            reasons.append(f"module {name} was imported from {', '.join(outside)}, outside the SHA's "
                           f"worktree {worktree}")
    return reasons


def _inside(path: str, root: str) -> bool:
    return os.path.commonpath([os.path.abspath(path), os.path.abspath(root)]) == os.path.abspath(root)
