"""Orchestrator overhead, measured in one run on this machine.

1. A sweep of RUNS runs of the fake bench (tests/orchestrator/fakebench), each working
   BENCH_S seconds, on the embedded LocalCluster with warm worktrees:
   (sweep wall - sum of bench walls) / sweep wall, and the median per-run dispatch overhead
   (bench end of run i -> bench start of run i+1).
2. Building the report (orchestrator.analysis.report_model.make_report) of one sweep in a results root holding
   REPORT_RUNS one-row run files spread over REPORT_SWEEPS sweeps, and reading the whole root.

Usage: python benchmarks/orchestrator_overhead.py [--runs 10] [--bench-s 5] [--report-runs 10000]
       [--report-sweeps 100]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "orchestrator"))
from fakebench.fakerepo import make_fake_repo, make_run  # noqa: E402

from orchestrator.analysis.report_model import make_report  # noqa: E402
from orchestrator.contract import PlannedRun  # noqa: E402
from orchestrator.dispatch.dispatcher import run_sweep  # noqa: E402
from orchestrator.spec.record import SideRecord, SweepRecord  # noqa: E402
from orchestrator.spec.schema import GateSpec, SideSpec, SweepSpec  # noqa: E402
from orchestrator.store.parquet import RunResult, run_table, runs_dir, write_parquet_atomic  # noqa: E402
from orchestrator.store.records import write_record  # noqa: E402
from orchestrator.worker.hostinfo import collect_host  # noqa: E402
from orchestrator.worker.worktrees import WorktreePool  # noqa: E402

STEP_MS = 100.0


def dispatch_overhead(root: Path, runs: int, bench_s: float) -> None:
    repo = make_fake_repo(root)
    measure = max(1, round(bench_s * 1000 / STEP_MS))
    params = {"num_envs": 8, "warmup": 0, "measure": measure, "threads": 1}
    plan = [make_run(repo, repo.shas[i % 2], order=i, results_root=root / "results", params=params,
                     extra_args=("--step-ms", str(STEP_MS)), sweep_id="overhead") for i in range(runs)]
    pool = WorktreePool()
    for sha in repo.shas:  # warm worktrees, as on a bench host that has run these SHAs before
        with pool.checkout(repo.path, sha):
            pass
    outcome = run_sweep(plan, scheduler=None, continue_on_error=False, show_progress=False)
    assert all(o["status"] == "ok" for o in outcome.runs), [o["error"] for o in outcome.runs]
    bench = sum(o["wall_s"] for o in outcome.runs)
    starts = [datetime.fromisoformat(o["started_at"]) for o in outcome.runs]
    ends = [datetime.fromisoformat(o["ended_at"]) for o in outcome.runs]
    gaps = [(start - end).total_seconds() for start, end in zip(starts[1:], ends[:-1], strict=True)]
    print(f"sweep: {runs} runs x {bench_s:g} s of fake bench work on the embedded LocalCluster")
    print(f"  sum of bench walls           {bench:8.2f} s")
    print(f"  dispatch wall (1st submit -> last outcome) {outcome.dispatch_s:8.2f} s  "
          f"overhead {(outcome.dispatch_s - bench) / outcome.dispatch_s:6.2%}  (target <= 5 %)")
    print(f"  whole run_sweep call (cluster start incl.) {outcome.wall_s:8.2f} s  "
          f"overhead {(outcome.wall_s - bench) / outcome.wall_s:6.2%}")
    print(f"  per-run dispatch overhead: median {statistics.median(gaps) * 1000:.0f} ms, "
          f"max {max(gaps) * 1000:.0f} ms  (target <= 500 ms)")


def synthetic_results(root: Path, n_runs: int, n_sweeps: int) -> list[str]:
    """``n_runs`` one-row run files spread over ``n_sweeps`` sweeps with their records; the sweep ids."""
    per_sweep = n_runs // n_sweeps
    cases = [f"sac/task{i}/mujoco" for i in range(5)]
    start = datetime(2026, 1, 1, tzinfo=UTC)
    header = {"audit": {"git_sha": "a" * 40, "module_file": "/x/envruntime/__init__.py", "env_class": "E"}}
    result = RunResult(status="ok", error=None, started_at=start, ended_at=start + timedelta(seconds=7),
                       exit_code=0, log_dir="/logs", host=collect_host(), header=header,
                       summary={"throughput": 1.0, "phase_means_ms": {"physics_ms": 1.0}})
    template = PlannedRun(sweep_id="template", run_key="template", order=0, side="base", ref="a",
                          sha="a" * 40, case=cases[0], algo="sac", task="task0", sim="mujoco",
                          variant="manager", repeat=0, repo="/repo", argv_template=("{python}",),
                          results_root=str(root))
    base = run_table(template, result)
    sweep_ids = []
    for n in range(n_sweeps):
        sweep_id = f"synthetic-20260101T{n // 3600:02d}{n // 60 % 60:02d}{n % 60:02d}"
        spec = SweepSpec(name="synthetic", sides={"base": SideSpec(ref="a"), "cand": SideSpec(ref="b")},
                         baseline="base", cases=cases, repeats=per_sweep // (2 * len(cases)),
                         gates=[GateSpec(metric="throughput", min_ratio=0.95)])
        sides = {"base": SideRecord(sha="a" * 40), "cand": SideRecord(sha="b" * 40)}
        write_record(root, SweepRecord(sweep_id=sweep_id, planned_runs=per_sweep, spec=spec, sides=sides))
        for i in range(per_sweep):
            side, case = ("cand" if i % 2 else "base"), cases[(i // 2) % len(cases)]
            throughput = 1e5 * (1.05 if i % 2 else 1.0) * (1 + 0.01 * ((i * 7919) % 13 - 6))
            values = {"sweep_id": sweep_id, "run_key": f"run{i:05d}", "side": side, "case": case,
                      "sha": ("b" if i % 2 else "a") * 40, "throughput": throughput}
            table = base
            for name, value in values.items():
                field = table.schema.field(name)
                column = pa.array([value], field.type)
                table = table.set_column(table.schema.get_field_index(name), field, column)
            write_parquet_atomic(table, runs_dir(root, sweep_id) / f"run{i:05d}.parquet")
        sweep_ids.append(sweep_id)
    return sweep_ids


def report_time(root: Path, n_runs: int, n_sweeps: int) -> None:
    t0 = time.perf_counter()
    sweep_id = synthetic_results(root, n_runs, n_sweeps)[-1]
    generated = time.perf_counter() - t0
    t0 = time.perf_counter()
    report = make_report(root, sweep_id)
    build = time.perf_counter() - t0
    t0 = time.perf_counter()
    one = pd.read_parquet(runs_dir(root, sweep_id)).groupby(["case", "side"])["throughput"].median()
    read_one = time.perf_counter() - t0
    t0 = time.perf_counter()
    everything = pd.read_parquet(root / "runs")
    read_all = time.perf_counter() - t0
    assert len(everything) == n_runs // n_sweeps * n_sweeps and report.missing == 0 and len(one) == 10
    print(f"report: results root with {len(everything)} run files in {n_sweeps} sweeps "
          f"(generated in {generated:.1f} s)")
    print(f"  make_report of one sweep ({n_runs // n_sweeps} runs)      {build:6.2f} s  (target <= 5 s)")
    print(f"  pd.read_parquet(one sweep) + groupby median  {read_one:6.2f} s")
    print(f"  pd.read_parquet(results/runs), every sweep  {read_all:6.2f} s  "
          f"({len(everything.columns)} columns)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--bench-s", type=float, default=5.0)
    parser.add_argument("--report-runs", type=int, default=10_000)
    parser.add_argument("--report-sweeps", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="shasweep-overhead-") as tmp:
        root = Path(tmp)
        os.environ["SHASWEEP_HOME"] = str(root / "home")  # inherited by the embedded worker
        dispatch_overhead(root, args.runs, args.bench_s)
        report_time(root / "report-root", args.report_runs, args.report_sweeps)


if __name__ == "__main__":
    main()
