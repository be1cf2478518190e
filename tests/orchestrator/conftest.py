"""Fixtures shared by the orchestrator tests that run the fake bench through ``execute_run``."""

from __future__ import annotations

import pytest
from fakebench.fakerepo import FakeRepo, make_fake_repo


@pytest.fixture
def repo(tmp_path, monkeypatch) -> FakeRepo:
    """The two-commit fake bench repository, with a private SHASWEEP_HOME, the default host lock and
    every CPU (a test module whose runs need other settings defines its own ``repo``)."""
    monkeypatch.setenv("SHASWEEP_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("SHASWEEP_LOCK", raising=False)
    monkeypatch.delenv("SHASWEEP_BENCH_CPUS", raising=False)
    return make_fake_repo(tmp_path)
