"""Results roots for the store tests, written by the real writer (``store.parquet.write_run``), and
what any reader must find in them."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from pathlib import Path

import duckdb
import pandas as pd
from test_results import outcome, planned

from orchestrator.contract import StepRecord
from orchestrator.spec.record import SweepRecord
from orchestrator.store.parquet import write_run
from orchestrator.store.query import ALL, read_runs, read_steps
from orchestrator.store.records import write_record
from orchestrator.store.step_log import StepLog

CASES = ("sac/g1_walk_flat/mujoco", "ppo/go2_joystick_flat/mujoco")
SIDES = ("base", "cand")


def write_sweep(tmp_path: Path, sweep_id: str, day: int = 0, repeats: int = 2, status: str = "ok",
                host: str = "bench1") -> list[str]:
    """A recorded sweep of every case x side x repeat (3 measured steps x 2 phases each); its run keys."""
    root = tmp_path / "results"
    spec = {"name": sweep_id.rsplit("-", 1)[0], "baseline": SIDES[0], "cases": list(CASES),
            "repeats": repeats, "sides": {side: {"ref": side} for side in SIDES}}
    write_record(root, SweepRecord.from_json({
        "sweep_id": sweep_id, "created": f"2026-01-{day + 1:02d}T00:00:00+00:00", "status": "finished",
        "planned_runs": repeats * len(CASES) * len(SIDES), "spec": spec,
        "sides": {side: {"ref": side, "sha": side[0] * 40} for side in SIDES}}))
    keys = []
    cells = [(case, side, repeat) for repeat in range(repeats) for case in CASES for side in SIDES]
    for order, (case, side, repeat) in enumerate(cells):
        key = f"{sweep_id}-{case.split('/')[1]}-{side}-{repeat}"
        run = dataclasses.replace(planned(tmp_path, key, sweep_id), side=side, case=case, sha=side[0] * 40,
                                  repeat=repeat, order=order)
        result = outcome(status=status, throughput=100.0 + order + day)
        steps = StepLog(StepRecord(i, i == 0, {"physics_ms": 2.0 + i, "x_ms": 1.0}) for i in range(4))
        started = result.started_at + timedelta(days=day, minutes=order)
        write_run(run, dataclasses.replace(result, started_at=started, steps=steps,
                                           host=dataclasses.replace(result.host, hostname=host)))
        keys.append(key)
    return keys


def runs_seen(root: Path) -> list[tuple[str, str, float]]:
    """(sweep, run key, throughput) of every run shasweep's reader returns, sorted."""
    runs = read_runs(root, ALL, ["sweep_id", "run_key", "throughput"])
    return sorted(runs.itertuples(index=False, name=None))


def steps_seen(root: Path) -> list[tuple[str, int, str, float]]:
    steps = read_steps(root, ALL, columns=["run_key", "step", "phase", "ms"])
    return sorted(steps.itertuples(index=False, name=None))


def plain_runs(root: Path) -> list[tuple[str, str, float]]:
    """The same rows as pandas and duckdb read the root (they must agree, and see no run twice)."""
    runs = pd.read_parquet(root / "runs", columns=["sweep_id", "run_key", "throughput"])
    runs = runs.astype(object).where(runs.notna(), None)  # duckdb's NULL is None, pandas' NaN
    by_pandas = sorted(runs.itertuples(index=False, name=None))
    by_duckdb = sorted(duckdb.sql(f"SELECT sweep_id, run_key, throughput FROM read_parquet("
                                  f"'{root}/runs/**/*.parquet', union_by_name = true)").fetchall())
    assert by_pandas == by_duckdb
    return by_pandas


def plain_steps(root: Path) -> list[tuple[str, int, str, float]]:
    steps = pd.read_parquet(root / "steps", columns=["run_key", "step", "phase", "ms"])
    return sorted(steps.itertuples(index=False, name=None))
