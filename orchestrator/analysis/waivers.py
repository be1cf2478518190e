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

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from orchestrator.analysis.verdicts import GateVerdict, Verdict

WAIVE, REVOKE = "waive", "revoke"
DECLARED_BY = "sweep YAML"  # ``by`` of a waiver declared in the YAML without one


@dataclass(frozen=True)
class Waiver:
    """One entry of a sweep's waiver log (a waiver or a revocation)."""

    action: str  # waive | revoke
    case: str
    side: str | None  # None: every non-baseline side
    gate: int | None  # None: every gate
    reason: str
    by: str
    time: str  # ISO 8601, UTC

    @property
    def target(self) -> tuple[str, str | None, int | None]:
        return self.case, self.side, self.gate

    def covers(self, verdict: GateVerdict) -> bool:
        """Whether this waiver applies to ``verdict``'s gate, case and side."""
        return (verdict.case == self.case and self.side in (None, verdict.side)
                and self.gate in (None, verdict.gate))

    def describe(self) -> str:
        """``gate 0, case sac/x/y, side mba`` (``every gate`` / ``every side`` when not narrowed)."""
        gate = "every gate" if self.gate is None else f"gate {self.gate}"
        side = "every side" if self.side is None else f"side {self.side}"
        return f"{gate}, case {self.case}, {side}"

    def to_dict(self) -> dict[str, Any]:
        return {"action": self.action, "case": self.case, "side": self.side, "gate": self.gate,
                "reason": self.reason, "by": self.by, "time": self.time}


def new_entry(action: str, case: str, side: str | None, gate: int | None, reason: str, by: str,
              now: datetime) -> Waiver:
    """A log entry made now (``shasweep waive``)."""
    return Waiver(action, case, side, gate, reason, by, now.isoformat(timespec="seconds"))


def waiver_log(record: dict[str, Any]) -> list[Waiver]:
    """Every waiver entry of the sweep in order: the YAML's declared ones, then the record's log.

    The log is read from disk, so an entry that is not a mapping of the expected keys is skipped.
    """
    declared = ((record.get("spec") or {}).get("waivers") or [])
    created = str(record.get("created", ""))
    entries = [_entry({"action": WAIVE, "time": created, **w, "by": w.get("by") or DECLARED_BY})
               for w in declared if isinstance(w, dict)]
    entries += [_entry(e) for e in record.get("waivers") or [] if isinstance(e, dict)]
    return [e for e in entries if e is not None]


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
        cover = next((w for w in waivers if w.covers(verdict)), None) if failed else None
        marked.append(replace(verdict, waived=cover.reason) if cover else verdict)
    return marked


def waived_count(verdicts: list[GateVerdict], waiver: Waiver) -> int:
    """How many of ``verdicts`` (already waived) ``waiver`` covers as a waived FAIL."""
    return sum(1 for v in verdicts if v.waived is not None and waiver.covers(v))


def _entry(raw: dict[str, Any]) -> Waiver | None:
    gate = raw.get("gate")
    if raw.get("action") not in (WAIVE, REVOKE) or not isinstance(raw.get("case"), str):
        return None
    if gate is not None and (isinstance(gate, bool) or not isinstance(gate, int)):
        return None
    side = raw.get("side")
    return Waiver(action=raw["action"], case=raw["case"], side=side if isinstance(side, str) else None,
                  gate=gate, reason=str(raw.get("reason") or ""), by=str(raw.get("by") or "-"),
                  time=str(raw.get("time") or "-"))
