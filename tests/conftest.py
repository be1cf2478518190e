"""Shared pytest configuration."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

E2E = Path(__file__).resolve().parent / "e2e"
LOCK_DIR_VAR = "SHASWEEP_LOCK_DIR"
_LOCK_PARENT = pytest.StashKey[Path]()


XDIST_VARS = ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID")


def pytest_configure(config: pytest.Config) -> None:
    """The processes the tests start (benches among them) do not inherit xdist's worker variables:
    under them a bench's pytest-benchmark disables itself. Each test process (each xdist worker) gets its own host-lock directory unless one is set:
    tests in two workers never wait for each other's host lock, and a developer's own sweep on this
    machine never waits for the suite's."""
    for name in XDIST_VARS:
        os.environ.pop(name, None)
    if os.environ.get(LOCK_DIR_VAR):
        return
    parent = Path(tempfile.mkdtemp(prefix="shasweep-test-locks-"))
    parent.chmod(0o755)  # the drills' second local user reaches the lock directory through it
    config.stash[_LOCK_PARENT] = parent
    os.environ[LOCK_DIR_VAR] = str(parent / "locks")  # created by the lock itself, mode 1777


def pytest_unconfigure(config: pytest.Config) -> None:
    parent = config.stash.get(_LOCK_PARENT, None)
    if parent is not None:
        os.environ.pop(LOCK_DIR_VAR, None)
        shutil.rmtree(parent, ignore_errors=True)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every end-to-end test is ``slow`` (real sweeps through clusters, processes and git): the fast
    tier a developer runs in a loop, ``pytest -m "not slow"``, leaves them to the full suite."""
    for item in items:
        if E2E in item.path.parents:
            item.add_marker(pytest.mark.slow)
