"""Results roots for the site's tests, written by the real writer (``store.parquet.write_run``) and
records: sweeps of two sides (base, cand) over a few cases, each case's throughput at a level the test
chooses per sweep, 1 % lognormal run noise (seeded), a throughput gate."""

from __future__ import annotations

import dataclasses
import hashlib
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
from test_results import outcome

from orchestrator.contract import PlannedRun, StepRecord
from orchestrator.spec.record import SweepRecord
from orchestrator.store.parquet import write_run
from orchestrator.store.records import write_record
from orchestrator.store.step_log import StepLog

CASES = ("sac/walk/mujoco", "ppo/run/mujoco")
SIDES = ("base", "cand")
GATES = [{"metric": "throughput", "min_ratio": 0.95}]
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def sha_of(*parts: object) -> str:
    return hashlib.sha1("/".join(map(str, parts)).encode()).hexdigest()


def sweep_id_of(i: int) -> str:
    return f"lab-{(T0 + timedelta(hours=i)):%Y%m%dT%H%M%S}"


def write_lab_sweep(root: Path, i: int, *, levels: dict[tuple[str, str], float] | None = None,
                    cases: tuple[str, ...] = CASES, sweep_id: str | None = None, host: str = "bench1",
                    repeats: int = 3, gates: list[dict] | None = None, waivers: list[dict] | None = None,
                    shas: dict[str, str] | None = None, suite: bool = False) -> str:
    """Sweep number ``i`` (created ``i`` hours after ``T0``): base at main's commit ``i // 2``, cand at a
    commit of its own; ``levels[(case, side)]`` scales that cell's throughput (default 1); ``suite``:
    each run also reports its time per call (``time_ms``), as a suite's runs do. Its id."""
    sweep_id = sweep_id or sweep_id_of(i)
    created = T0 + timedelta(hours=i)
    shas = shas or {"base": sha_of("main", i // 2), "cand": sha_of("feature", i)}
    spec = {"name": "lab", "baseline": "base", "cases": list(cases), "repeats": repeats,
            "order": "interleaved", "sides": {side: {"ref": side} for side in SIDES},
            "gates": GATES if gates is None else gates, "waivers": waivers or []}
    cells = [(repeat, case, side) for repeat in range(repeats) for case in cases for side in SIDES]
    write_record(root, SweepRecord.from_json({
        "sweep_id": sweep_id, "created": created.isoformat(), "sequence": i + 1, "status": "finished",
        "planned_runs": len(cells), "spec": spec,
        "sides": {side: {"ref": side, "sha": shas[side]} for side in SIDES}}))
    rng = np.random.default_rng(i)
    base = outcome()
    for order, (repeat, case, side) in enumerate(cells):
        throughput = 1000.0 * (levels or {}).get((case, side), 1.0) * float(rng.lognormal(0.0, 0.01))
        run = PlannedRun(sweep_id=sweep_id, run_key=sha_of(sweep_id, order)[:16], order=order, side=side,
                         ref=side, sha=shas[side], case=case, algo="sac", task="walk", sim="mujoco",
                         variant="manager", repeat=repeat, repo="/lab", argv_template=("{python}",),
                         params={"num_envs": 8}, results_root=str(root))
        started = created + timedelta(minutes=order)
        steps = StepLog([StepRecord(0, True, {"physics_ms": 2.0}), StepRecord(1, False, {"physics_ms": 2.0})])
        write_run(run, dataclasses.replace(
            base, started_at=started, ended_at=started + timedelta(seconds=3), steps=steps, audited=True,
            summary={"throughput": throughput, "phase_means_ms": {"physics_ms": 2.0},
                     **({"metrics": {"time_ms": 1000.0 / throughput}} if suite else {})},
            host=dataclasses.replace(base.host, id=host, hostname=host)))
    return sweep_id
