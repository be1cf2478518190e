"""Sides that measure the same thing: one commit with the same settings, an A/A comparison.

Two refs can name one commit (``main`` and ``origin/main``, a tag on a branch's tip). Sides that run
it with the same variant, params and env compare the machine with itself: a fine A/A sweep when
meant (the sweep says ``aa: true``), a mistake otherwise, so ``plan``, ``run`` and the report warn.
Sides of one commit with different settings compare those settings and are not warned about.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SETTINGS: tuple[str, ...] = ("sha", "variant", "params", "env")


def identical_sides(sides: Mapping[str, Mapping[str, Any]]) -> list[list[str]]:
    """Groups of two or more side labels whose ``SETTINGS`` are equal, in declaration order. ``sides``
    is shaped as the sweep record's ``sides`` (label -> ref, sha, variant, params, env)."""
    groups: dict[str, list[str]] = {}
    for label, side in sides.items():
        groups.setdefault(repr([side.get(key) for key in SETTINGS]), []).append(label)
    return [labels for labels in groups.values() if len(labels) > 1]


def aa_warnings(sides: Mapping[str, Mapping[str, Any]], aa: bool) -> list[str]:
    """One warning per group of identical sides, unless the sweep is an A/A sweep on purpose."""
    if aa:
        return []
    return [f"warning: sides {' and '.join(labels)} run the same commit "
            f"{str(sides[labels[0]].get('sha'))[:12]} with the same settings, an A/A comparison; set "
            "aa: true if that is the intent" for labels in identical_sides(sides)]
