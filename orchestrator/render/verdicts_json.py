"""``reports/<id>.verdicts.json``: every gate verdict with its interval and n, and the exit code, for CI.

Numbers that do not exist (no interval) are ``null``. A verdict's ``waived`` flag (default false) is kept, and
waived verdicts are counted apart. ``added`` and ``removed`` list a suite's cases on one side only
(``{"case", "side"}``), which have no verdict. Format 2 added them; in format 1 such a case was a
NO DATA verdict.
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

from orchestrator.analysis.report_model import Report
from orchestrator.render.terminal import report_verdict_line
from orchestrator.render.verdict_line import is_waived, verdict_counts

FORMAT_VERSION = 2


def verdicts_text(report: Report) -> str:
    """The document as the text of its file."""
    return json.dumps(verdicts_document(report), indent=2, allow_nan=False, default=str) + "\n"


def verdicts_document(report: Report) -> dict[str, Any]:
    """The JSON document of ``report``'s verdicts."""
    n_ok = sum(ok for ok, _ in report.counts.values())
    return {
        "format": FORMAT_VERSION, "sweep_id": report.sweep_id, "exit_code": report.exit_code,
        "verdict_line": report_verdict_line(report),
        "counts": verdict_counts(report.gates),
        "runs": {"ok": n_ok, "not_ok": len(report.failures), "not_run": report.missing},
        "verdicts": [_gate(g) for g in report.gates],
        **{word: [{"case": c, "side": side} for side, cases in report.one_sided.items()
                  for c in getattr(cases, word)] for word in ("added", "removed")},
    }


def _gate(gate: Any) -> dict[str, Any]:
    comparison = _finite(dataclasses.asdict(gate.comparison))
    if not comparison["floor"]:  # written only for counts read as a measurement
        del comparison["floor"]
    return {"gate": gate.gate, "metric": gate.metric, "case": gate.case, "side": gate.side,
            "bound": gate.bound, "verdict": gate.verdict, "waived": is_waived(gate),
            "reason": gate.reason, **comparison}


def _finite(values: dict[str, Any]) -> dict[str, Any]:
    return {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in values.items()}
