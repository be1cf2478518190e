"""A table fitted to a terminal's width without ever splitting a word: long text columns (``shrink``:
case names, metric names, errors) are first abbreviated with an ellipsis down to a comfortable width,
then the columns the reader can spare are left out (``drop`` rank: the highest goes first), then the
long text columns are abbreviated further; a cell is never wrapped onto a second line.

``fit_table`` returns a rich table whose every column is ``no_wrap`` at an exact width, and the names
of the columns it left out (the full report has them).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rich.table import Table as RichTable
from rich.text import Text

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

    @property
    def natural(self) -> int:
        return max([len(self.header), *(len(str(cell)) for cell in self.cells)])


def fit_table(title: str, columns: list[Column], width: int) -> tuple[RichTable, list[str]]:
    """``columns`` as a table no wider than ``width`` (as far as dropping and shrinking allow), and the
    names of the columns left out."""
    widths = {id(c): c.natural for c in columns}
    _shrink(columns, widths, width, COMFORTABLE)
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
    heading = Text(title, style="bold", no_wrap=True, overflow="ellipsis")  # a long case name: cut, not split
    table = RichTable(title=heading, title_justify="left", box=None, pad_edge=False, header_style="bold",
                      show_edge=False)
    for column in kept:
        table.add_column(column.header, justify=column.justify, no_wrap=True, overflow="ellipsis",  # type: ignore[arg-type]
                         width=widths[id(column)], style=column.style)
    for row in zip(*(c.cells for c in kept), strict=True) if kept else []:
        table.add_row(*(_abbreviated(cell, widths[id(c)]) for cell, c in zip(row, kept, strict=True)))
    return table, dropped


def _shrink(columns: list[Column], widths: dict[int, int], width: int, floor: int) -> None:
    """Narrow the text columns, widest first, none below ``floor`` (or its header), until the table
    fits ``width`` or none can give more."""
    excess = _width(columns, widths) - width
    for column in sorted((c for c in columns if c.shrink), key=lambda c: -widths[id(c)]):
        if excess <= 0:
            return
        cut = min(excess, widths[id(column)] - max(floor, len(column.header)))
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


def _abbreviated(cell: str | Text, width: int) -> str | Text:
    """``cell`` cut to ``width`` with an ellipsis at the end."""
    if len(str(cell)) <= width:
        return cell
    if isinstance(cell, Text):
        cut = cell.copy()
        cut.truncate(width, overflow="ellipsis")
        return cut
    return cell[:width - 1] + ELLIPSIS
