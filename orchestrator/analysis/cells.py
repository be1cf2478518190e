"""A sweep's runs grouped by (case, side) once: what the report counts and summarises per cell.

Grouping once costs one pass over the rows; a boolean mask per cell (and per metric) cost a pass
over every row for each of them, so a 10,000-benchmark suite's report never ended (issue 41 item 6).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Protocol, TypeVar

import pandas as pd

from orchestrator.analysis import stats

Cell = tuple[str, str]  # (case, side)


class OfCell(Protocol):
    case: str
    side: str


T = TypeVar("T", bound=OfCell)


def by_cell(items: Iterable[T]) -> dict[Cell, list[T]]:
    """``items`` (gate verdicts, report rows: anything with a ``case`` and a ``side``) per (case, side),
    in their order: a lookup per cell instead of a scan of all of them."""
    found: dict[Cell, list[T]] = defaultdict(list)
    for item in items:
        found[item.case, item.side].append(item)
    return dict(found)


def cell_counts(runs: pd.DataFrame, cases: list[str], sides: list[str]) -> dict[Cell, tuple[int, int]]:
    """(ok, not ok) runs of every (case, side)."""
    ok = runs["status"] == "ok"
    counted = {kind: runs[mask].groupby(["case", "side"], sort=False).size().to_dict()
               for kind, mask in (("ok", ok), ("not ok", ~ok))}
    return {(c, s): (int(counted["ok"].get((c, s), 0)), int(counted["not ok"].get((c, s), 0)))
            for c in cases for s in sides}


def cell_summaries(ok: pd.DataFrame, cases: list[str], sides: list[str], metrics: list[str]
                   ) -> dict[tuple[str, str, str], stats.Summary]:
    """``stats.summarize`` of every metric of every (case, side) of the ok runs ``ok``."""
    present = [m for m in metrics if m in ok]
    groups = dict(iter(ok.groupby(["case", "side"], sort=False)[present])) if present else {}
    empty = stats.summarize([])
    return {(c, s, m): stats.summarize(groups[c, s][m]) if (c, s) in groups and m in present else empty
            for c in cases for s in sides for m in metrics}
