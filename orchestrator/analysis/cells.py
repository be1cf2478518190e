"""A sweep's runs grouped by (case, side) once: what the report counts and summarises per cell.

Grouping once costs one pass over the rows; a boolean mask per cell (and per metric) cost a pass
over every row for each of them, so a 10,000-benchmark suite's report never ended (issue 41 item 6).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator
from typing import Protocol, TypeVar

import numpy as np
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
    """``stats.summarize`` of every metric of every (case, side) of the ok runs ``ok``: the cells of
    each metric with as many values summarised together (``by_count``)."""
    found: dict[tuple[str, str, str], stats.Summary] = {}
    present = [m for m in metrics if m in ok]
    if present and len(ok):
        rows = ok.groupby(["case", "side"], sort=False).indices
        keys = list(rows)
        codes = np.full(len(ok), -1)
        for code, positions in enumerate(rows.values()):
            codes[positions] = code
        for metric in present:
            values = pd.to_numeric(ok[metric], errors="coerce").to_numpy(dtype=float)
            kept = np.isfinite(values) & (codes >= 0)
            for which, stacked in by_count(codes[kept], values[kept], len(keys)):
                found |= {(*keys[k], metric): summary
                          for k, summary in zip(which, stats.summarize_rows(stacked), strict=True)}
    empty = stats.summarize([])
    return {(c, s, m): found.get((c, s, m), empty) for c in cases for s in sides for m in metrics}


def by_count(codes: np.ndarray, values: np.ndarray, groups: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The ``values`` of each group (``codes``: 0 .. groups - 1, one per value) stacked with the
    groups that have as many: (those groups, their values ``[len(groups), k]``, each group's in the
    order given) per count ``k``, groups without a value included (``k`` 0)."""
    order = np.argsort(codes, kind="stable")
    counts = np.bincount(codes, minlength=groups)
    starts = np.cumsum(counts) - counts
    for k in np.unique(counts):
        which = np.flatnonzero(counts == k)
        yield which, values[order[starts[which, None] + np.arange(k)]]
