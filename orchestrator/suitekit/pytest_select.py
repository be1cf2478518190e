"""A pytest plugin that runs only the tests a file lists (docs/design.md, "Suites in lockstep",
falling back): a lockstep round runs a suite's cases that cannot run on the control channel as one
separate process of the suite's own command, pytest-benchmark's real plugin on, with ``-p
orchestrator.suitekit.pytest_select --shasweep-select=FILE`` (a JSON list of node ids) added."""

from __future__ import annotations

import json

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("shasweep").addoption("--shasweep-select", help="a JSON list of the node ids to run")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    path = config.getoption("shasweep_select")
    if not path:
        raise pytest.UsageError("orchestrator.suitekit.pytest_select needs --shasweep-select")
    with open(path, encoding="utf-8") as listed:
        wanted = set(json.load(listed))
    kept = [item for item in items if item.nodeid in wanted]
    rest = [item for item in items if item.nodeid not in wanted]
    if rest:
        config.hook.pytest_deselected(items=rest)
    items[:] = kept
