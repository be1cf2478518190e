"""The session: what a notebook and the command line call, one module per job. Run side: plan, run,
resume, bisect and try sweeps; read side: a recorded sweep's report, compare, history, list and
status; admin: waive, cancel, gc, compact, index. ``cli`` parses arguments and calls it; below it,
``cli -> session -> {store, analysis} -> render`` is the read side's only route. Its imports:
docs/design.md, "Import rules".

    from orchestrator.session import RunOptions, plan_sweep, run_sweep

    run = run_sweep(plan_sweep("sweeps/smoke.yaml", ["repeats=5"]), RunOptions(progress=False))
    report = run.report()
    print(report.exit_code, [(g.case, g.side, g.verdict, round(g.ratio, 3)) for g in report.gates])

A name below is imported from its module on first use, so that a light verb (``list``) importing one
module of the session does not import the sweep YAML's stack with the others.
"""

from __future__ import annotations

import importlib
from typing import Any

# module -> the names it gives the package
_EXPORTS: dict[str, tuple[str, ...]] = {
    "bisection": ("BisectOptions", "BisectRun", "bisect", "resume_bisect"),
    "options": ("RunOptions",),
    "sweep": ("SweepPlan", "lockstep_residency", "noise_estimates", "plan_sweep", "resume", "run_sweep"),
    "recorded": ("SweepRun", "find_sweep", "locate_results"),
    "reports": ("ExportedReport", "export_report", "show_report", "write_report_files"),
    "documents": ("Document",),
    "comparison": ("compare_sweeps", "comparison_document"),
    "run_history": ("case_history", "history_document"),
    "site": ("SiteBuild", "build_site"),
    "listing": ("SweepListing", "SweepRow", "list_sweeps"),
    "status": ("SweepStatus", "cancel_sweep", "sweep_status"),
    "waive": ("RecordedWaiver", "record_waiver"),
    "housekeeping": ("Cleanup", "collect_garbage"),
    "compaction": ("Compaction", "IndexSummary", "SweepCompaction", "compact_sweeps", "update_index"),
}
_MODULES: dict[str, str] = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = sorted(_MODULES)


def __getattr__(name: str) -> Any:
    """``name`` from its module, imported now (PEP 562)."""
    if name not in _MODULES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_MODULES[name]}"), name)
