"""What the dispatcher sends to a bench worker as one task: one run, or a lockstep round (the runs of
one case in one round of an ``order: lockstep`` sweep), which runs whole under one hold of the host
lock (``worker.round_task``)."""

from __future__ import annotations

from collections.abc import Sequence

from orchestrator.contract import PlannedRun

Unit = list[PlannedRun]


def unit_at(runs: Sequence[PlannedRun], index: int) -> Unit:
    """The unit that starts at ``runs[index]``: that run alone, or with the runs after it of the same
    lockstep round (they are consecutive in every plan)."""
    first = runs[index]
    if not first.lockstep:
        return [first]
    end = index + 1
    while end < len(runs) and runs[end].lockstep and _round(runs[end]) == _round(first):
        end += 1
    return list(runs[index:end])


def _round(run: PlannedRun) -> tuple[str, int]:
    return run.case, run.repeat
