"""Where only the bench knows its metrics (protocol v1), its first ok run decides whether the gates'
metrics exist: a gate naming one that run did not report stops the sweep before the next run.

``plan`` checks a gate's metric against what the protocol declares (``capabilities.describe``); a v1
bench declares nothing, so without this a gate on a typo (``fromat_ms``) would run the whole sweep
and end in NO DATA. The first ok run of each case checks the gates of that case; what it found is
the reason the sweep stopped (``problem``), which the session turns into exit 2 after recording.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from orchestrator.contract import Outcome
from orchestrator.spec.protocol_checks import did_you_mean
from orchestrator.spec.schema import GateSpec


@dataclass
class FirstRunMetrics:
    """Called with every outcome (``dispatcher.dispatch_runs``'s ``check``); a stop reason or None."""

    gates: list[GateSpec]
    checked: set[str] = field(default_factory=set)  # cases whose first ok run was checked
    problem: str | None = None  # the first gate metric a bench did not report

    def __call__(self, outcome: Outcome) -> str | None:
        reported, case = outcome.reported, outcome.case
        if outcome.status != "ok" or reported is None or case in self.checked:
            return None  # a run copied from an earlier sweep carries no names: the next one decides
        self.checked.add(case)
        for index, gate in enumerate(self.gates):
            if gate.case in (None, case) and gate.metric not in reported:
                self.problem = (
                    f"gates[{index}].metric: {gate.metric!r} is not reported by the bench: its first ok run "
                    f"({outcome.side} {case} repeat {outcome.repeat}) reported "
                    f"{', '.join(reported) or 'nothing'}{did_you_mean(gate.metric, reported)}; "
                    "the sweep stopped before its next run")
                return self.problem
        return None
