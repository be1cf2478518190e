"""Shared pytest configuration."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
E2E = TESTS / "e2e"
ENVRUNTIME = TESTS / "envruntime"
LOCK_DIR_VAR = "SHASWEEP_LOCK_DIR"
_LOCK_PARENT = pytest.StashKey[Path]()


XDIST_VARS = ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID")


def pytest_configure(config: pytest.Config) -> None:
    """The processes the tests start (benches among them) do not inherit xdist's worker variables:
    under them a bench's pytest-benchmark disables itself. Each test process (each xdist worker) gets
    its own host-lock directory unless one is set: tests in two workers never wait for each other's
    host lock, and a developer's own sweep on this machine never waits for the suite's."""
    for name in XDIST_VARS:
        os.environ.pop(name, None)
    if os.environ.get(LOCK_DIR_VAR) or _is_xdist_controller(config):
        return  # the controller's workers inherit its environment: each makes its own
    parent = Path(tempfile.mkdtemp(prefix="shasweep-test-locks-"))
    parent.chmod(0o755)  # the drills' second local user reaches the lock directory through it
    config.stash[_LOCK_PARENT] = parent
    os.environ[LOCK_DIR_VAR] = str(parent / "locks")  # created by the lock itself, mode 1777


def _is_xdist_controller(config: pytest.Config) -> bool:
    """Whether this process hands tests to xdist workers rather than running them."""
    return bool(getattr(config.option, "numprocesses", None)) and not hasattr(config, "workerinput")


def pytest_unconfigure(config: pytest.Config) -> None:
    parent = config.stash.get(_LOCK_PARENT, None)
    if parent is not None:
        os.environ.pop(LOCK_DIR_VAR, None)
        shutil.rmtree(parent, ignore_errors=True)


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every end-to-end test is ``slow`` (real sweeps through clusters, processes and git): the fast
    tier a developer runs in a loop, ``pytest -m "not slow"``, leaves them to the full suite.

    For ``-n 2 --dist loadgroup`` (the README's command): tests that share what is costly to make run
    in one process (``xdist_group``; xdist hands out the largest groups first), and the ungrouped
    tests go in the order sorted here, slowest kind first, so that the last a worker takes are short."""
    for item in items:
        if E2E in item.path.parents:
            item.add_marker(pytest.mark.slow)
        group = _shared_costs(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
    items.sort(key=lambda item: _KIND_ORDER.index(item.path.relative_to(TESTS).parts[0])
               if len(item.path.relative_to(TESTS).parts) > 1 else len(_KIND_ORDER))


_KIND_ORDER = ("e2e", "envruntime", "orchestrator")


def _shared_costs(item: pytest.Item) -> str | None:
    """The group of tests that must share one process: every envruntime test (the clone's Numba cache
    is filled once, not by two processes compiling the same kernels at once), and each module whose
    module-scoped fixtures build a repository, a cluster or a worktree (built once, not per worker)."""
    if ENVRUNTIME in item.path.parents:
        return "envruntime"
    fixtures = getattr(item, "_fixtureinfo", None)
    definitions = fixtures.name2fixturedefs.values() if fixtures is not None else ()
    if any(d.scope == "module" for defs in definitions for d in defs):
        return item.path.relative_to(TESTS).as_posix()
    return None
