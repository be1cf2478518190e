"""Sides that measure the same thing: one commit with the same settings, an A/A comparison.

Two refs can name one commit (``main`` and ``origin/main``, a tag on a branch's tip). Sides that run
it with the same variant, params and env compare the machine with itself: a fine A/A sweep when
meant (the sweep says ``aa: true``), a mistake otherwise, so ``plan``, ``run`` and the report warn.
Sides of one commit with different settings compare those settings and are not warned about.
"""

from __future__ import annotations

from collections.abc import Mapping

from orchestrator.spec.record import SideRecord


def identical_sides(sides: Mapping[str, SideRecord]) -> list[list[str]]:
    """Groups of two or more side labels of one SHA with equal variant, params and env, in
    declaration order."""
    groups: dict[str, list[str]] = {}
    for label, side in sides.items():
        groups.setdefault(repr([side.sha, side.variant, side.params, side.env]), []).append(label)
    return [labels for labels in groups.values() if len(labels) > 1]


def aa_warnings(sides: Mapping[str, SideRecord], aa: bool) -> list[str]:
    """One warning per group of identical sides, unless the sweep is an A/A sweep on purpose."""
    if aa:
        return []
    return [f"warning: sides {' and '.join(labels)} run the same commit {str(sides[labels[0]].sha)[:12]} "
            "with the same settings, an A/A comparison; set aa: true if that is the intent"
            for labels in identical_sides(sides)]
