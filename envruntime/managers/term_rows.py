"""What the reward and termination managers share: the term loop.

Each term owns one row of a term-major ``(terms, N)`` buffer (contiguous, so a term's kernel fills
it in one pass). The terms are built once every manager exists (``resolve``) and called in order
every step (``fill``); the subclass then combines the rows with one kernel.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from envruntime.managers.terms import build


class TermRows:
    """Terms ``terms`` of kind ``kind`` (named in build errors), term ``k`` filling ``rows[k]``."""

    def __init__(self, kind: str, terms: Mapping[str, Any], env: Any, rows: np.ndarray) -> None:
        self._kind = kind
        self._cfgs = terms
        self._env = env
        self._rows = rows
        self.term_names = tuple(terms)
        self._calls: list[tuple[Any, np.ndarray]] = []

    def resolve(self) -> None:
        """Build the terms (called once every manager exists)."""
        self._calls = [
            (build(cfg, self._env, self._kind, name), self._rows[k])
            for k, (name, cfg) in enumerate(self._cfgs.items())
        ]

    def fill(self) -> None:
        """Call every term, in order, on its row."""
        for fn, row in self._calls:
            fn(row)
