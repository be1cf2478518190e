"""How waivers show in the reports: the gate counts with waived FAILs apart and the waiver log
(``analysis.waivers``); a waived FAIL's verdict cell is ``tables.verdict_text``."""

from __future__ import annotations

from orchestrator.analysis.report_model import Report
from orchestrator.analysis.waivers import REVOKE, active_waivers, waived_count
from orchestrator.render.tables import Table, one_line
from orchestrator.render.verdict_line import counts_text

WAIVERS_NOTE = ("Accepted exceptions, in the order recorded (the sweep YAML's first, then `shasweep "
                "waive`); a revocation cancels the earlier waivers of the same gate, case and side. A "
                "waived FAIL keeps its verdict but no longer makes the exit code 1.")


def gates_line(report: Report) -> str:
    """``gates: PASS 6 / FAIL 0 / INCONCLUSIVE 0 / WAIVED 1`` (``verdict_line.counts_text``)."""
    return "gates: " + counts_text(report.gates)


def waivers_table(report: Report) -> Table:
    """Every entry of the waiver log; a waiver in force says how many FAILs it waives."""
    active = {id(w) for w in active_waivers(report.waivers)}

    def state(entry) -> str:
        if entry.action == REVOKE:
            return "revocation"
        if id(entry) not in active:
            return "revoked"
        return f"in force: waives {waived_count(report.gates, entry)} FAIL(s)"

    rows = [[w.time, w.by, w.action, w.describe(), one_line(w.reason), state(w)] for w in report.waivers]
    return Table(["time", "by", "action", "applies to", "reason", "state"], rows)
