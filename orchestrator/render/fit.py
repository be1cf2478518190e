"""A table fitted to a terminal's width without ever splitting a word: long text columns (``shrink``:
case names, metric names, errors) are first abbreviated with an ellipsis down to a comfortable width,
then the columns the reader can spare are left out (``drop`` rank: the highest goes first), then the
long text columns are abbreviated further; a cell is never wrapped onto a second line. Case names
lose the prefix they all share first (``shared_prefix``: a directory, a module), and what is still
too long is cut in the middle (``cut="middle"``), so the part that tells them apart, a test's name
or its parameters, stays.

``fit_table`` returns a rich table whose every column is ``no_wrap`` at an exact width, and the names
of the columns it left out (the full report has them). Its title, headers and text cells are shown
``printable``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from rich.table import Table as RichTable
from rich.text import Text

from orchestrator.printable import printable

ELLIPSIS = "…"
COLUMN_GAP = 2  # rich's padding between two columns of a table without edges
COMFORTABLE = 24  # text columns are abbreviated to this before any column is left out
MIN_SHRUNK = 8  # and to this at most once columns were left out


@dataclass
class Column:
    """One column: its header and cells (plain text or styled ``Text``), how it may give way, and its
    justification. ``drop``: None never; otherwise the highest rank is left out first. ``shrink``:
    its cells may be abbreviated."""

    header: str
    cells: list[str | Text] = field(default_factory=list)
    drop: int | None = None
    shrink: bool = False
    justify: str = "left"
    style: str = ""
    name: str = ""  # how the note of left-out columns names it (default: the header)
    cut: str = "end"  # where an abbreviated cell loses its characters: "end" or "middle"
    keep: int = COMFORTABLE  # characters it keeps (at most its natural width) before columns are left out

    @property
    def natural(self) -> int:
        return max([len(self.header), *(len(str(cell)) for cell in self.cells)])


def fit_table(title: str, columns: list[Column], width: int) -> tuple[RichTable, list[str]]:
    """``columns`` as a table no wider than ``width`` (as far as dropping and shrinking allow), and the
    names of the columns left out."""
    columns = [_printable(c) for c in columns]
    widths = {id(c): c.natural for c in columns}
    _shrink(columns, widths, width, None)
    kept, dropped = list(columns), []
    while _width(kept, widths) > width:
        candidates = [c for c in kept if c.drop is not None]
        if not candidates:
            break
        victim = max(candidates, key=lambda c: c.drop)  # type: ignore[arg-type, return-value]
        kept.remove(victim)
        dropped.append(victim.name or victim.header)
    _shrink(kept, widths, width, MIN_SHRUNK)
    _widen(kept, widths, width)  # what leaving columns out freed goes back to the abbreviated ones
    # a long case name: cut, not split
    heading = Text(printable(title), style="bold", no_wrap=True, overflow="ellipsis")
    table = RichTable(title=heading, title_justify="left", box=None, pad_edge=False, header_style="bold",
                      show_edge=False)
    for column in kept:
        table.add_column(column.header, justify=column.justify, no_wrap=True, overflow="ellipsis",  # type: ignore[arg-type]
                         width=widths[id(column)], style=column.style)
    for row in zip(*(c.cells for c in kept), strict=True) if kept else []:
        table.add_row(*(_abbreviated(cell, widths[id(c)], c.cut) for cell, c in zip(row, kept, strict=True)))
    return table, dropped


def _printable(column: Column) -> Column:
    """``column`` with its header and text cells ``printable`` (a styled ``Text`` is the report's own)."""
    return replace(column, header=printable(column.header),
                   cells=[c if isinstance(c, Text) else printable(c) for c in column.cells])


def _shrink(columns: list[Column], widths: dict[int, int], width: int, floor: int | None) -> None:
    """Narrow the text columns, widest first, none below ``floor`` (None: each its own ``keep``) or its
    header, until the table fits ``width`` or none can give more."""
    excess = _width(columns, widths) - width
    for column in sorted((c for c in columns if c.shrink), key=lambda c: -widths[id(c)]):
        if excess <= 0:
            return
        least = column.keep if floor is None else floor
        cut = min(excess, widths[id(column)] - max(least, len(column.header)))
        if cut > 0:
            widths[id(column)] -= cut
            excess -= cut


def _widen(columns: list[Column], widths: dict[int, int], width: int) -> None:
    room = width - _width(columns, widths)
    for column in (c for c in columns if c.shrink):
        grow = min(max(room, 0), column.natural - widths[id(column)])
        widths[id(column)] += grow
        room -= grow


def _width(columns: list[Column], widths: dict[int, int]) -> int:
    return sum(widths[id(c)] for c in columns) + COLUMN_GAP * max(len(columns) - 1, 0)


def _abbreviated(cell: str | Text, width: int, cut: str = "end") -> str | Text:
    """``cell`` cut to ``width`` with an ellipsis at the end, or (``cut="middle"``, plain text) in the
    middle, keeping a little more of its end than of its start."""
    if len(str(cell)) <= width:
        return cell
    if isinstance(cell, Text):
        short = cell.copy()
        short.truncate(width, overflow="ellipsis")
        return short
    if cut == "middle" and width >= 3:
        head = (width - 1) // 2
        return cell[:head] + ELLIPSIS + cell[len(cell) - (width - 1 - head):]
    return cell[:width - 1] + ELLIPSIS


_SEPARATORS = ("::", "/")  # where a case name's parts end: a path's directories, a test's module


def shared_prefix(names: Sequence[str]) -> str:
    """The longest prefix every name shares that ends at a separator (``/`` of a path, ``::`` of a
    pytest id) and leaves each name something: ``bench/test_enums.py::`` when every case is a test of
    that module, ``bench/`` when they come from several; empty when none is shared."""
    if not names:
        return ""
    common = os.path.commonprefix(list(names))
    ends = [common.rfind(sep) + len(sep) for sep in _SEPARATORS if common.rfind(sep) >= 0]
    prefix = common[:max(ends, default=0)]
    return prefix if all(len(name) > len(prefix) for name in names) else ""
