"""The worker boundary is typed (``orchestrator.contract``): a run's result and outcome are dataclasses
with a checked status, the outcome's JSON (a task's ``finished`` event) keeps its keys, and no module
borrows another's private helpers."""

from __future__ import annotations

import ast
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from orchestrator.contract import NO_STEPS, STATUSES, HostRecord, Outcome, PlannedRun, RunResult
from orchestrator.store.parquet import run_table
from orchestrator.worker.task_channel import published

PACKAGE = Path(__file__).resolve().parents[2] / "orchestrator"
NOW = datetime(2026, 1, 1, tzinfo=UTC)
# the keys every finished event's outcome had before the outcome was typed
WIRE_KEYS = ("run_key", "order", "side", "case", "sha", "repeat", "host_id", "status", "error",
             "throughput", "wall_s", "exit_code", "started_at", "ended_at", "log_dir", "runs_file",
             "steps_file", "reported", "lock_wait_s")


def planned() -> PlannedRun:
    return PlannedRun(sweep_id="s", run_key="k0", order=3, side="new", ref="HEAD", sha="a" * 40, case="c",
                      algo=None, task=None, sim=None, variant="manager", repeat=1, repo="/repo",
                      argv_template=("{python}",))


def test_a_status_that_is_none_of_the_statuses_is_refused():
    assert STATUSES == ("ok", "failed", "timeout", "cancelled", "audit_failed")
    with pytest.raises(ValueError, match="run status 'done' is none of ok, failed"):
        RunResult(status="done", error=None, started_at=NOW, ended_at=NOW, exit_code=0, log_dir="")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="run status 'OK'"):
        planned().outcome(status="OK")


def test_an_unknown_host_writes_typed_null_columns():
    result = RunResult(status="failed", error="x", started_at=NOW, ended_at=NOW, exit_code=None, log_dir="")
    assert result.host == HostRecord() and result.steps is NO_STEPS
    table = run_table(planned(), result)
    row = table.to_pylist()[0]
    assert row["host_cpu_logical"] is None and str(table.schema.field("host_cpu_logical").type) == "int64"
    assert row["steps"] == 0 and row["status"] == "failed"


def test_the_finished_events_outcome_keeps_its_keys_and_reads_back():
    outcome = planned().outcome(status="ok", throughput=12.5, wall_s=1.0, exit_code=0, reported=("a_ms",),
                                host_id="h1", runs_file="/r", steps_file="/s", lock_wait_s=0.0)
    wire = json.loads(published(outcome))
    assert set(WIRE_KEYS) <= set(wire) and wire["reported"] == ["a_ms"] and wire["status"] == "ok"
    assert Outcome.from_json(wire) == outcome


def test_an_outcome_from_an_older_or_newer_worker_reads():
    older = {"run_key": "k0", "order": 3, "side": "new", "case": "c", "sha": "a" * 40, "repeat": 1,
             "host_id": None, "status": "failed", "error": "boom", "throughput": None, "wall_s": None,
             "exit_code": None, "someday": 1}
    outcome = Outcome.from_json(older)
    assert outcome.error == "boom" and outcome.reported is None and not outcome.no_control
    with pytest.raises(ValueError):
        Outcome.from_json({**older, "status": "exploded"})
    with pytest.raises(TypeError):
        Outcome.from_json({"run_key": "k0"})


def _private_uses(path: Path) -> list[str]:
    """``module._name`` where ``module`` was imported from the orchestrator, and ``from x import _name``."""
    tree = ast.parse(path.read_text())
    modules, found = set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("orchestrator"):
            modules |= {alias.asname or alias.name for alias in node.names}
            found += [f"{path.name}: imports {a.name}" for a in node.names if a.name.startswith("_")]
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules
                and node.attr.startswith("_") and not node.attr.startswith("__")):
            found.append(f"{path.name}:{node.lineno}: {node.value.id}.{node.attr}")
    return found


def test_no_module_borrows_another_modules_private_helpers(tmp_path):
    assert [hit for path in sorted(PACKAGE.rglob("*.py")) for hit in _private_uses(path)] == []
    sample = tmp_path / "round_task.py"  # what the round task did before task_channel
    sample.write_text("from orchestrator.worker import bench_task\np = bench_task._dask_publisher()\n")
    assert _private_uses(sample) == ["round_task.py:2: bench_task._dask_publisher"]
