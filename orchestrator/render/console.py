"""The console every terminal line of shasweep goes to (rich only: a sweep's first line needs no more)."""

from __future__ import annotations

from rich.console import Console


def terminal_console() -> Console:
    """A console on stdout: colour only on a terminal, never syntax highlighting, and no markup: a
    string it prints (a table cell, a case name, a bench's error) shows as the characters it is."""
    return Console(highlight=False, soft_wrap=False, markup=False)
