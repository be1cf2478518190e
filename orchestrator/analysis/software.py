"""The software a set of runs ran with, and what changed between two sets.

Two sources per run: the bench's own header audit (``audit_versions``: a JSON object package ->
version, whatever the bench reports, e.g. ``mujoco-uni-runtime``) and the bench host's record
(``host_versions``, the orchestrator's fixed package list, and ``host_python``). A source is
compared only when both sets report it, so an older bench that reports no versions raises nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pandas as pd

# runs-table column -> the source it is shown as
VERSION_COLUMNS: dict[str, str] = {"audit_versions": "bench", "host_versions": "host"}
HOST_PYTHON_COLUMN = "host_python"
SOFTWARE_COLUMNS: tuple[str, ...] = (*VERSION_COLUMNS, HOST_PYTHON_COLUMN)

Versions = dict[tuple[str, str], tuple[str, ...]]  # (source, package) -> distinct versions, sorted


@dataclass(frozen=True)
class VersionChange:
    """One package whose versions differ between two sets of runs."""

    source: str  # bench | host
    package: str
    before: tuple[str, ...]
    after: tuple[str, ...]

    def describe(self) -> str:
        """``mujoco-uni-runtime 0.3.1 -> 0.4.0`` (several versions joined by ``/``)."""
        return f"{self.package} {'/'.join(self.before) or 'absent'} -> {'/'.join(self.after) or 'absent'}"


def reported_versions(runs: pd.DataFrame) -> Versions:
    """Every (source, package) version the runs report (a version of null reads ``none``)."""
    found: dict[tuple[str, str], set[str]] = {}
    for column, source in VERSION_COLUMNS.items():
        for cell in runs[column].dropna() if column in runs else []:
            for package, version in _json_object(cell).items():
                shown = "none" if version is None else str(version)
                found.setdefault((source, str(package)), set()).add(shown)
    if HOST_PYTHON_COLUMN in runs:
        for version in runs[HOST_PYTHON_COLUMN].dropna():
            found.setdefault(("host", "python"), set()).add(str(version))
    return {key: tuple(sorted(values)) for key, values in sorted(found.items())}


def version_changes(before: Versions, after: Versions) -> list[VersionChange]:
    """The packages whose versions differ, for every source both ``before`` and ``after`` report."""
    sources = {s for s, _ in before} & {s for s, _ in after}
    keys = sorted({k for k in (*before, *after) if k[0] in sources})
    pairs = [(key, before.get(key, ()), after.get(key, ())) for key in keys]
    return [VersionChange(source, package, old, new) for (source, package), old, new in pairs if old != new]


def _json_object(cell: object) -> dict:
    """A JSON object cell (untrusted: anything else reads as empty)."""
    try:
        parsed = json.loads(cell) if isinstance(cell, str) else None
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def describe_changes(changes: list[VersionChange]) -> list[str]:
    """Each change once (the bench and the host often report the same package, e.g. numpy)."""
    return list(dict.fromkeys(change.describe() for change in changes))
