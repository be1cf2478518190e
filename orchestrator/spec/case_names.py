"""Case names: any one-line name, ``algo/task/sim`` ones split into parts (they also give the
placeholders ``{algo} {task} {sim}``).
"""

from __future__ import annotations

import re

from orchestrator.errors import SpecError
from orchestrator.spec.schema import Case

_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*\Z")


def case_parts(text: str) -> Case | None:
    """The parts of ``algo/task/sim``; None for a case of any other shape."""
    parts = text.split("/")
    if len(parts) == 3 and all(_LABEL.match(p) for p in parts):
        return Case(*parts)
    return None


def check_case_name(text: str, key: str) -> None:
    """Any non-empty name on one line."""
    if not text.strip() or text != text.strip() or any(ord(c) < 32 for c in text):
        raise SpecError(f"{text!r} is not a case name (non-empty, one line, no surrounding spaces)", key)
