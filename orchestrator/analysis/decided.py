"""One figure per claim (docs/design.md, "Statistics"): the ratio and interval a report states for a
compared cell, and which changes are clear.

A cell (case, side, metric) that a gate judges is stated as the gate decided it: the ratio of the
runs its deciding look compared and its interval at the gate's confidence at that look (an adaptive
sweep's look spends only a share of the error rate). The tables, the suite table, ``gh``, JUnit, BMF
and verdicts.json all show that one figure, so no output contradicts the gate beside it; a cell no
gate judges is stated at 95 % over all its runs.

A *clear change* is a claim about many cells at once ("2 clear changes" among 60 benchmarks), so it
is judged family-wise. Each compared (case, side) gives one figure, listed once: its gate's metric
(the most severe verdict where several gates judge it), else the sweep's primary metric. It is a
clear change when a gate on it FAILed, or when its interval read at ``1 - (1 - c) / K`` (``c``: the
figure's confidence, ``K``: the figures judged together, Bonferroni) lies entirely above or below 1.
With every true ratio at 1, some figure is called clear in at most ``1 - c`` of sweeps, whatever the
number of cases; the tables' intervals, one per cell, would call about ``K (1 - c)`` of them clear.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, replace

from orchestrator.analysis import stats
from orchestrator.analysis.verdicts import GateVerdict, Verdict

# which gate's figure a cell judged by several states: the most severe verdict, then the first gate
SEVERITY: dict[str, int] = {Verdict.FAIL: 0, Verdict.NO_DATA: 1, Verdict.INCONCLUSIVE: 2, Verdict.PASS: 3}


def deciding_gate(gates: Iterable[GateVerdict], case: str, side: str, metric: str | None = None
                  ) -> GateVerdict | None:
    """The gate verdict whose figure the cell (``metric`` None: any metric of (case, side)) states:
    the most severe one, ties to the first gate; None when no gate judges it."""
    mine = [g for g in gates if g.case == case and g.side == side and metric in (None, g.metric)]
    return min(mine, key=lambda g: (SEVERITY.get(g.verdict, len(SEVERITY)), g.gate), default=None)


@dataclass(frozen=True)
class DecidedFigure:
    """The one figure of a compared (case, side): what every output states and headlines.

    ``comparison``: the ratio and interval stated (``gate``'s at its deciding look, else the table's
    at 95 %); ``family``: the same interval widened for the figures judged together (what makes a
    change clear, ``judged_together``); ``gate``: the verdict whose figure it is, if any."""

    case: str
    side: str
    metric: str
    comparison: stats.Comparison
    gate: GateVerdict | None = None
    family: stats.Comparison | None = None

    @property
    def ratio(self) -> float:
        return self.comparison.ratio

    @property
    def failed(self) -> bool:
        """Whether its gate FAILed (waived or not)."""
        return self.gate is not None and self.gate.verdict == Verdict.FAIL

    @property
    def clear(self) -> bool:
        """A clear change: its gate FAILed (waived or not), or its family-wise interval excludes 1."""
        if self.failed:
            return True
        c = self.family or self.comparison
        return c.has_interval and (c.low > 1 or c.high < 1)

    @property
    def claimed(self) -> stats.Comparison:
        """The interval of the claim that makes it a change: a FAIL's as its gate decided it (the
        gate's share of the error rate is already its share of the family's), else the family-wise
        one. A FAIL beside a widened interval that reaches over the bound contradicts its own gate."""
        return self.comparison if self.failed or self.family is None else self.family

    @property
    def size(self) -> float:
        """|log ratio|, what orders changes (largest first); infinite for an undefined ratio."""
        return abs(math.log(self.ratio)) if self.ratio > 0 else math.inf


def judged_together(figures: list[DecidedFigure]) -> list[DecidedFigure]:
    """``figures`` with their ``family`` interval: each read at ``1 - (1 - c) / K``, K the figures
    that have an interval (at least 1)."""
    k = max(sum(f.comparison.has_interval for f in figures), 1)
    return [replace(f, family=f.comparison.at(1 - (1 - f.comparison.confidence) / k)) for f in figures]


def clear_changes(figures: Iterable[DecidedFigure]) -> list[DecidedFigure]:
    """The clear changes among ``figures``, largest first."""
    return sorted((f for f in figures if f.clear), key=lambda f: -f.size)
