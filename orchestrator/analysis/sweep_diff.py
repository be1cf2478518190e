"""What two sweeps ran differently besides the code: the settings a cross-sweep comparison must warn about.

Compared from the two sweep records: each common side's variant, params and env as it ran, the bench
command, the ``pythonpath`` and the bench host record (package versions excepted: those are
``analysis.software``'s, and the record's thread variables are the worker's own, not a bench's).
A difference every common side shares is named once (``params.measure: 30 -> 200``), one that only
some sides have is named per side (``sides.mba.env.X: unset -> 1``).
"""

from __future__ import annotations

import json
from typing import Any

from orchestrator.spec.record import SweepRecord

SPEC_SETTINGS: tuple[str, ...] = ("command", "pythonpath")  # compared besides the sides' settings
HOST_SKIPPED: frozenset[str] = frozenset({"versions", "threads"})
UNSET = "unset"


def settings_differences(before: SweepRecord, after: SweepRecord, sides: list[str]) -> list[str]:
    """One line per setting that differs between the records ``before`` and ``after``."""
    per_side = {side: _diff(_flat(_side_settings(before, side)), _flat(_side_settings(after, side)))
                for side in sides}
    lines = []
    shared = set.intersection(*(set(d.items()) for d in per_side.values())) if per_side else set()
    for key, (old, new) in sorted(shared):
        lines.append(f"{key}: {old} -> {new}")
    for side, diffs in per_side.items():
        lines += [f"sides.{side}.{key}: {old} -> {new}" for key, (old, new) in sorted(diffs.items())
                  if (key, (old, new)) not in shared]
    for name in SPEC_SETTINGS:
        old, new = getattr(before.spec, name), getattr(after.spec, name)
        if old != new:
            lines.append(f"{name}: {_show(old)} -> {_show(new)}")
    host = _diff(_flat(_host(before)), _flat(_host(after)))
    lines += [f"host.{key}: {old} -> {new}" for key, (old, new) in sorted(host.items())]
    return lines


def _side_settings(record: SweepRecord, side: str) -> dict[str, Any]:
    """The side's variant, params and env as recorded (the sweep's with the side's overrides)."""
    info = record.sides.get(side)
    return {k: v for k, v in info.planned().items() if k != "sha"} if info is not None else {}


def _host(record: SweepRecord) -> dict[str, Any]:
    return {k: v for k, v in (record.host or {}).items() if k not in HOST_SKIPPED}


def _flat(values: dict[str, Any], prefix: str = "") -> dict[str, str]:
    """Nested mappings as dotted keys with display values."""
    flat: dict[str, str] = {}
    for key, value in values.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat |= _flat(value, f"{name}.")
        else:
            flat[name] = _show(value)
    return flat


def _diff(old: dict[str, str], new: dict[str, str]) -> dict[str, tuple[str, str]]:
    return {key: (old.get(key, UNSET), new.get(key, UNSET)) for key in sorted(set(old) | set(new))
            if old.get(key, UNSET) != new.get(key, UNSET)}


def _show(value: object) -> str:
    if value is None:
        return UNSET
    if isinstance(value, list):
        return " ".join(map(str, value))
    return value if isinstance(value, str) else json.dumps(value)
