"""A git repository of two commits, each with a small library and its own pytest-benchmark suite (the
suite in the repository, so each side has its own: cases that come and go, a benchmark that breaks on
one side), for the tests of suites in lockstep."""

from __future__ import annotations

import hashlib
import textwrap
from dataclasses import replace
from pathlib import Path

from fakebench.fakerepo import FakeRepo, git

from orchestrator.capabilities import describe
from orchestrator.contract import InstrumentSettings, LockstepSettings, PlannedRun

LIBRARY = '''
def spin(n):
    total = 0
    for i in range(n):
        total = (total + i * i) % 1000003
    return total
'''
BASE_SUITE = '''
import pytest
import lib


@pytest.mark.parametrize("n", [2000, 3000])
def test_spin(benchmark, n):
    benchmark(lib.spin, n)


def test_removed(benchmark):
    benchmark(lib.spin, 1000)
'''


def make_suite_repo(root: Path, candidate_suite: str | None = None) -> FakeRepo:
    """The base commit (``BASE_SUITE``) and a candidate whose suite is ``candidate_suite`` (default:
    the base's)."""
    repo = root / "suite-repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "lib.py").write_text(textwrap.dedent(LIBRARY))
    shas = []
    for suite in (BASE_SUITE, candidate_suite or BASE_SUITE):
        (repo / "test_bench.py").write_text(textwrap.dedent(suite))
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "--allow-empty", "-m", "suite")
        shas.append(git(repo, "rev-parse", "HEAD"))
    return FakeRepo(repo, shas)


def suite_round(repo: FakeRepo, results: Path, *, repeat: int = 0, fallback: str = "stop",
                cases: tuple[str, ...] = ("*",), timeout_s: float = 30.0,
                instrument: bool = False) -> list[PlannedRun]:
    """One lockstep round of the repository's suite, as the plan makes it (both sides, the pytest
    command with the plugin, the selection command for fallen-back cases)."""
    driver = describe("pytest-benchmark").suite_driver
    assert driver is not None
    command = ("{python}", "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_bench.py",
               "--benchmark-json={result}")
    settings = LockstepSettings(block_steps=2, blocks=3, block_warmup=1, fallback=fallback, step_ms=2.0,
                                select_argv=driver.render(command, driver.select))
    key = hashlib.sha256(str(results).encode()).hexdigest()[:8]
    runs = []
    for order, (side, sha) in enumerate(zip(("base", "cand"), repo.shas, strict=True)):
        runs.append(PlannedRun(
            sweep_id=f"suite-{key}", run_key=f"{side}-{repeat}-{key}", order=2 * repeat + order, side=side,
            ref=side, sha=sha, case="(suite)", algo=None, task=None, sim=None, variant="manager",
            repeat=repeat, repo=str(repo.path), argv_template=driver.render(command, driver.lockstep),
            params={"threads": 1}, timeout_s=timeout_s, results_root=str(results),
            protocol="pytest-benchmark", suite_cases=cases, lockstep=settings,
            instrument=InstrumentSettings(driver.render(command, driver.lockstep), marks=True)
            if instrument else None))
    return [replace(run) for run in runs]
