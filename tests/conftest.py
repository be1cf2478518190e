"""Shared pytest configuration."""

from __future__ import annotations

from pathlib import Path

import pytest

E2E = Path(__file__).resolve().parent / "e2e"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every end-to-end test is ``slow`` (real sweeps through clusters, processes and git): the fast
    tier a developer runs in a loop, ``pytest -m "not slow"``, leaves them to the full suite."""
    for item in items:
        if E2E in item.path.parents:
            item.add_marker(pytest.mark.slow)
