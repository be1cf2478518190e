"""Recorded suite sweeps for the report tests: each side's suite runs (one bench process per side and
round) leave one row per benchmark it found, as the worker writes them (``suite_run_key``, the
process's own CPU time and peak RSS on every case of the run), with values drawn from a seeded model."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from orchestrator.spec.record import SweepRecord
from orchestrator.store.records import write_record

SHAS = {"old": "a" * 40, "new": "b" * 40}
Value = Callable[[str, str, int], float]  # (case, side, round) -> time_ms


@dataclass
class SuiteSweep:
    """A suite sweep to write: ``cases`` per side, ``rounds`` rounds, ``time_ms(case, side, round)``;
    ``user_s``: the suite process's user CPU seconds per benchmark it ran (so more benchmarks, more
    CPU); ``spec``: keys over the defaults (gates, order, max_repeats, ...)."""

    sweep_id: str
    cases: dict[str, list[str]]
    time_ms: Value
    rounds: int = 4
    user_s: float = 0.5
    spec: dict = field(default_factory=dict)
    adaptive: dict | None = None

    def write(self, root: Path) -> None:
        order = self.spec.get("order", "interleaved")
        for side, cases in self.cases.items():
            for r in range(self.rounds):
                suite_key = f"{side}-{r}"
                for case in cases:
                    self._write_row(root, side, r, suite_key, case, order, len(cases))
        spec = {"name": self.sweep_id.rsplit("-", 1)[0], "baseline": "old", "cases": ["*"],
                "repeats": self.rounds, "sides": {s: {"ref": s} for s in SHAS}, "order": order,
                "order_seed": 0, "protocol": "pyperf", "gates": [{"metric": "time_ms", "max_ratio": 1.05}],
                **self.spec}
        write_record(root, SweepRecord.from_json({
            "sweep_id": self.sweep_id, "created": "2026-01-01T00:00:00+00:00", "status": "finished",
            "repo": "/repo", "planned_runs": len(self.cases) * self.rounds, "spec": spec,
            "sides": {s: {"ref": s, "sha": sha} for s, sha in SHAS.items()},
            "host": {"cpu_model": "Test CPU", "cpu_logical": 2}, "adaptive": self.adaptive}))

    def _write_row(self, root: Path, side: str, r: int, suite_key: str, case: str, order: str,
                   benchmarks: int) -> None:
        time_ms = self.time_ms(case, side, r)
        key = f"{suite_key}-{self.cases[side].index(case)}"
        row = {"sweep_id": self.sweep_id, "run_key": key, "suite_run_key": suite_key,
               "side": side, "ref": side, "sha": SHAS[side], "case": case, "variant": None, "repeat": r,
               "order": r, "status": "ok", "error": None, "wall_s": 1.0, "params": "{}", "env": "{}",
               "time_ms": time_ms, "throughput": 1000 / time_ms, "protocol": "pyperf",
               "bench_user_s": self.user_s * benchmarks, "bench_sys_s": 0.1, "bench_max_rss_mib": 20.0,
               "ran_in": "lockstep" if order == "lockstep" else None, "log_dir": f"/logs/{suite_key}"}
        path = root / "runs" / f"sweep={self.sweep_id}" / f"{row['run_key']}.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist([row]), path)
