"""Waivers: recorded exceptions that accept a gate's FAIL, so it no longer fails the sweep.

A waiver names a case and optionally a side (default: every non-baseline side) and a gate index
(default: every gate), with a reason and who accepted it. They come from two places, read in this
order: the sweep YAML's ``waivers`` list (declared up front, dated when the sweep was created) and the
sweep record's append-only ``waivers`` log, which ``shasweep waive`` grows (``--revoke`` appends a
revocation: it cancels every earlier waiver of exactly the same case, side and gate). A waived FAIL
keeps its verdict and shows as ``FAIL (waived: reason)``; only the exit code rule
(``verdicts.gates_exit_code``) treats it apart.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from orchestrator.analysis.verdicts import GateVerdict, Verdict
from orchestrator.spec.record import REVOKE, WAIVE, SweepRecord, Waiver

DECLARED_BY = "sweep YAML"  # ``by`` of a waiver declared in the YAML without one


def new_entry(action: str, case: str, side: str | None, gate: int | None, reason: str, by: str,
              now: datetime) -> Waiver:
    """A log entry made now (``shasweep waive``)."""
    return Waiver(action, case, side, gate, reason, by, now.isoformat(timespec="seconds"))


def waiver_log(record: SweepRecord) -> list[Waiver]:
    """Every waiver entry of the sweep in order: the YAML's declared ones (dated when the sweep was
    created), then the record's log."""
    declared = [Waiver(WAIVE, w.case, w.side, w.gate, w.reason, w.by or DECLARED_BY, record.created)
                for w in record.spec.waivers]
    return [*declared, *record.waivers]


def active_waivers(log: list[Waiver]) -> list[Waiver]:
    """The waivers of ``log`` that no later revocation of the same target cancelled, in order."""
    active: list[Waiver] = []
    for entry in log:
        if entry.action == REVOKE:
            active = [w for w in active if w.target != entry.target]
        else:
            active.append(entry)
    return active


def apply_waivers(verdicts: list[GateVerdict], waivers: list[Waiver]) -> list[GateVerdict]:
    """``verdicts`` with every FAIL that an active waiver covers marked waived (the first one's reason)."""
    marked = []
    for verdict in verdicts:
        failed = verdict.verdict == Verdict.FAIL
        cover = next((w for w in waivers if _covers(w, verdict)), None) if failed else None
        marked.append(replace(verdict, waived=cover.reason) if cover else verdict)
    return marked


def waived_count(verdicts: list[GateVerdict], waiver: Waiver) -> int:
    """How many of ``verdicts`` (already waived) ``waiver`` covers as a waived FAIL."""
    return sum(1 for v in verdicts if v.waived is not None and _covers(waiver, v))


def _covers(waiver: Waiver, verdict: GateVerdict) -> bool:
    return waiver.covers(verdict.case, verdict.side, verdict.gate)
