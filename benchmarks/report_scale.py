"""The report of a large benchmark suite: time and peak RSS of each output of one finished sweep.

    python benchmarks/report_scale.py [--cases 10000] [--repeats 3] [--steps 20] [--work DIR]
        [--linearity 1000]

A results root is generated with the project's writers: one finished pyperf suite sweep (`cases:
discover`) of --cases benchmarks, sides old and new, --repeats interleaved rounds, one row per
(benchmark, side, round) as a suite run leaves it (`store.parquet.run_table` of a template row, the
columns filled per row), --steps step rows of `time_ms` per row, compacted as `shasweep run` leaves
it (`store.compact.write_compacted`), a `time_ms <= 1.15x` gate on every case; 1 % of the cases are
slower on `new`. Then each output, as a fresh process under `/usr/bin/time -v` (wall, CPU, peak RSS):
`shasweep report ID --format html` (the terminal report, the Markdown, CSV and verdicts files and
the HTML page: what `run` does at its end), and `report --format gh`, `--format junit`, `--format
bmf`. The whole report is their sum; the targets (issue 41 item 6): at 10,000 cases <= 60 s and
<= 1 GB peak RSS, cost linear in rows (--linearity N: the same at N and 2N cases, the ratios
printed). The HTML page's size is printed beside issue 37's target (a 60-case suite's page <= 5 MB).

Other processes share the machine: read the ratios measured in one run before absolute times.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa

from orchestrator.capabilities import suite_case_key
from orchestrator.contract import BenchUsage, HostRecord, PlannedRun, RunResult, StepRecord
from orchestrator.spec.record import SweepRecord
from orchestrator.store.compact import write_compacted
from orchestrator.store.parquet import run_table
from orchestrator.store.records import write_record
from orchestrator.store.step_log import STEPS_SCHEMA, StepLog

SIDES = ("old", "new")
SWEEP_ID = "suite-20270101T000000"
T0 = datetime(2027, 1, 1, tzinfo=UTC)
COMMAND = ["{python}", "{sweep_dir}/bench.py", "--quiet", "-o", "{result}"]
SLOWER_SHARE, SLOWER = 0.01, 1.3  # of the cases, slower on ``new`` by this factor
GATE = {"metric": "time_ms", "max_ratio": 1.15}
OUTPUTS: dict[str, list[str]] = {"report --format html": ["--format", "html"],
                                 "report --format gh": ["--format", "gh"],
                                 "report --format junit": ["--format", "junit"],
                                 "report --format bmf": ["--format", "bmf"]}
TARGET_S, TARGET_MIB, TARGET_CASES = 60.0, 1024.0, 10_000
PAGE_TARGET_MIB, PAGE_TARGET_CASES = 5.0, 60


def case_names(cases: int) -> list[str]:
    """pytest-like names: a module per 100 benchmarks, parametrised tests."""
    return [f"benchmarks/test_module_{i // 100:03d}.py::test_benchmark[{i:05d}]" for i in range(cases)]


def write_suite_sweep(root: Path, cases: int, repeats: int = 3, steps: int = 20, seed: int = 0,
                      slower_share: float = SLOWER_SHARE) -> str:
    """A finished, compacted suite sweep of ``cases`` benchmarks (``case_names``) under ``root``, a
    ``slower_share`` of them slower on ``new``; its id."""
    names = case_names(cases)
    rng = np.random.default_rng(seed)
    base_ms = rng.lognormal(-2.0, 1.0, len(names))
    slower = rng.random(len(names)) < slower_share
    shas = {side: f"{i + 1:x}" * 40 for i, side in enumerate(SIDES)}
    rows: list[dict[str, object]] = []
    step_keys, step_ms = [], []
    template = _template_row(root)
    order = 0
    for repeat in range(repeats):
        for side in SIDES:
            suite_key = f"{side}-{repeat}-suite"
            factor = np.where(slower & (side == "new"), SLOWER, 1.0)
            run_ms = base_ms * factor * rng.lognormal(0.0, 0.02, len(names))
            samples = run_ms[:, None] * rng.lognormal(0.0, 0.03, (len(names), steps))
            started = T0 + timedelta(seconds=60 * order)
            for i, name in enumerate(names):
                key = suite_case_key(suite_key, name)
                rows.append({"run_key": key, "side": side, "ref": side, "sha": shas[side], "case": name,
                             "repeat": repeat, "order": order, "suite_run_key": suite_key,
                             "started_at": started, "ended_at": started + timedelta(seconds=50),
                             "time_ms": float(run_ms[i]), "throughput": 1000.0 / float(run_ms[i])})
                step_keys.append(key)
                step_ms.append(samples[i])
            order += 1
    _write_record(root, shas, repeats)
    write_compacted(root, SWEEP_ID, _runs_table(template, rows),
                    _steps_table(step_keys, np.concatenate(step_ms), steps))
    return SWEEP_ID


def _template_row(root: Path) -> pa.Table:
    """One suite case's runs row as the worker writes it; every generated row starts from it."""
    run = PlannedRun(sweep_id=SWEEP_ID, run_key="x", order=0, side="old", ref="old", sha="0" * 40,
                     case="x", algo=None, task=None, sim=None, variant=None, repeat=0, repo="/suite/repo",
                     argv_template=tuple(COMMAND), params={}, results_root=str(root), protocol="pyperf")
    host = HostRecord(hostname="bench1", cpu_model="lab CPU", cpu_logical=16, cpu_physical=8, ram_gib=64.0,
                      os="Linux", kernel="6.1", python="3.11.2", versions='{"numpy": "2.2.0"}',
                      threads='{"OMP_NUM_THREADS": null}', affinity="0-15", id="bench1",
                      worker="tcp://127.0.0.1:40000", cpu_governor="performance", cpu_turbo="off",
                      isolated_cpus="", steal_frac=0.0, load_before=0.5, load_after=0.6, step_cv=0.02)
    result = RunResult(status="ok", error=None, started_at=T0, ended_at=T0, exit_code=0,
                       log_dir="/suite/logs", host=host,
                       header={"audit": {"tool": "pyperf", "versions": {"pyperf": "2.8.0"},
                                         "source_unit": "second", "samples": 12}},
                       summary={"throughput": 1.0, "phase_means_ms": {"time_ms": 1.0}},
                       steps=StepLog([StepRecord(0, False, {"time_ms": 1.0})]),
                       usage=BenchUsage(60.0, 55.0, 1.0, 80.0, "rusage"), pythonpath=["/suite/worktree"],
                       audited=True, worktree="/suite/worktree", suite_run_key="x", elapsed_s=50.0)
    return run_table(run, result)


def _runs_table(template: pa.Table, rows: list[dict[str, object]]) -> pa.Table:
    """``rows`` (the varying columns) over ``template``'s constant ones, in its schema."""
    n, varying = len(rows), rows[0].keys()
    columns = {}
    for field in template.schema:
        if field.name in varying:
            columns[field.name] = pa.array([r[field.name] for r in rows], field.type)
        else:
            columns[field.name] = pa.repeat(template.column(field.name)[0], n).cast(field.type)
    return pa.table(columns, schema=template.schema)


def _steps_table(keys: list[str], ms: np.ndarray, steps: int) -> pa.Table:
    n = len(keys) * steps
    return pa.table({"sweep_id": pa.repeat(pa.scalar(SWEEP_ID), n),
                     "run_key": pa.array(np.repeat(np.array(keys, dtype=object), steps), pa.string()),
                     "step": pa.array(np.tile(np.arange(steps), len(keys)), pa.int64()),
                     "warmup": pa.repeat(pa.scalar(False), n),
                     "phase": pa.repeat(pa.scalar("time_ms"), n),
                     "ms": pa.array(ms, pa.float64())}, schema=STEPS_SCHEMA)


def _write_record(root: Path, shas: dict[str, str], repeats: int) -> None:
    spec = {"name": "suite", "baseline": SIDES[0], "cases": ["*"], "protocol": "pyperf",
            "command": COMMAND, "repeats": repeats, "gates": [GATE],
            "sides": {side: {"ref": side} for side in SIDES}}
    write_record(root, SweepRecord.from_json({
        "sweep_id": SWEEP_ID, "created": T0.isoformat(timespec="seconds"), "status": "finished",
        "repo": "/suite/repo", "results_root": str(root), "planned_runs": repeats * len(SIDES), "spec": spec,
        "sides": {side: {"ref": side, "sha": sha} for side, sha in shas.items()}}))


@dataclass(frozen=True)
class Measured:
    wall_s: float
    cpu_s: float
    max_rss_mib: float


def timed(argv: list[str]) -> Measured:
    """Wall and CPU time and peak RSS of ``argv`` as a fresh process (``/usr/bin/time -v``)."""
    proc = subprocess.run(["/usr/bin/time", "-v", *argv], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True, check=False, env={**os.environ, "COLUMNS": "120"})
    if proc.returncode not in (0, 1, 4):
        raise RuntimeError(f"{' '.join(argv)} exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    wall = 0.0
    for part in re.search(r"Elapsed \(wall clock\) time.*: (\S+)", proc.stderr).group(1).split(":"):
        wall = wall * 60 + float(part)
    cpu = sum(float(re.search(rf"{kind} time \(seconds\): (\S+)", proc.stderr).group(1))
              for kind in ("User", "System"))
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr).group(1)) / 1024
    return Measured(wall, cpu, rss)


def measure(root: Path) -> dict[str, Measured]:
    """Each output of the sweep under ``root``, as a fresh ``shasweep report`` process."""
    shasweep = [sys.executable, "-m", "orchestrator.cli", "report", SWEEP_ID, "--results", str(root)]
    return {name: timed([*shasweep, *extra]) for name, extra in OUTPUTS.items()}


def measured_size(work: Path, cases: int, repeats: int, steps: int) -> tuple[dict[str, Measured], float]:
    """Generate the sweep of ``cases`` under ``work``, measure every output; the HTML page's MiB too."""
    root = work / f"cases-{cases}" / "results"
    write_suite_sweep(root, cases, repeats, steps)
    measured = measure(root)
    page = (root / "reports" / f"{SWEEP_ID}.html").stat().st_size / 2**20
    shutil.rmtree(root.parent)
    return measured, page


def show(cases: int, measured: dict[str, Measured], page_mib: float) -> None:
    for name, m in measured.items():
        print(f"  {name:<24} {m.wall_s:7.2f} s  (CPU {m.cpu_s:6.2f} s)  {m.max_rss_mib:7.0f} MiB", flush=True)
    whole = sum(m.wall_s for m in measured.values())
    peak = max(m.max_rss_mib for m in measured.values())
    print(f"  whole report: {whole:.1f} s, peak RSS {peak:.0f} MiB, HTML page {page_mib:.2f} MiB")
    if cases == TARGET_CASES:
        print(f"  against the targets at {TARGET_CASES} cases: time x{whole / TARGET_S:.2f} of "
              f"{TARGET_S:g} s, peak RSS x{peak / TARGET_MIB:.2f} of {TARGET_MIB:g} MiB (<= 1 meets it)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=TARGET_CASES)
    parser.add_argument("--repeats", type=int, default=3, help="interleaved rounds of both sides")
    parser.add_argument("--steps", type=int, default=20, help="step rows per benchmark and run")
    parser.add_argument("--linearity", type=int, default=1000, metavar="N",
                        help="also measure N and 2N cases and print the ratios (0: skip)")
    parser.add_argument("--work", type=Path, help="where the roots go (default: a temporary directory)")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="report-scale-"))
    print(f"report_scale: a pyperf suite sweep, sides {' and '.join(SIDES)}, {args.repeats} rounds, "
          f"{args.steps} step rows per benchmark and run; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}; under {work}", flush=True)
    page_cases, page_mib = PAGE_TARGET_CASES, 0.0
    for cases in dict.fromkeys([PAGE_TARGET_CASES, args.cases]):
        print(f"{cases} cases ({cases * args.repeats * len(SIDES):,} rows):", flush=True)
        measured, mib = measured_size(work, cases, args.repeats, args.steps)
        show(cases, measured, mib)
        page_mib = mib if cases == page_cases else page_mib
    print(f"HTML page of {page_cases} cases: {page_mib:.2f} MiB, x{page_mib / PAGE_TARGET_MIB:.2f} of the "
          f"{PAGE_TARGET_MIB:g} MB target")
    if args.linearity:
        small, _ = measured_size(work, args.linearity, args.repeats, args.steps)
        large, _ = measured_size(work, 2 * args.linearity, args.repeats, args.steps)
        print(f"linearity {args.linearity} -> {2 * args.linearity} cases (2x the rows; linear: x2.00):")
        for name in small:
            a, b = small[name], large[name]
            print(f"  {name:<24} CPU x{b.cpu_s / a.cpu_s:5.2f}  "
                  f"peak RSS x{b.max_rss_mib / a.max_rss_mib:5.2f}")
    if args.work is None:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
