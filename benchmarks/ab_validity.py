"""A/B validity: how often does a gate raise a false alarm, and how often does it catch a real slowdown?

A temporary git repository holds three commits of a CPU-bound synthetic bench's work size: a
baseline, one doing 5 % more work per step and one doing 10 % more (``work.json``; the bench is
this file's ``bench`` subcommand, run in the SHA's worktree, speaking run protocol v1). K sweeps
per condition -- A/A (baseline against itself), baseline vs +5 %, baseline vs +10 % -- go through
the real orchestrator path (``shasweep run``: spec, plan, dispatch to one shared embedded Dask
cluster, Parquet, report), conditions interleaved so machine load hits all alike. Each sweep has
``repeats`` interleaved rounds and two gates: ``throughput >= min_ratio`` (wall clock, what users
gate on) and ``cpu_ms <= cpu_max_ratio`` (the bench's CPU time per step, which time-slicing by
other processes on a loaded machine does not inflate). A gate's FAIL counts as "flagged": a false
alarm in A/A, a detection otherwise.

Usage: python benchmarks/ab_validity.py [--k 10] [--repeats 5] [--min-ratio 0.97]
       [--cpu-max-ratio 1.03] [--step-ms 20] [--measure 20] [--keep DIR]
       python benchmarks/ab_validity.py bench --stream PATH ...   (the synthetic bench itself)
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

# The orchestrator (pandas, pyarrow, Dask) is imported only by the driver, inside its functions, so
# the bench subcommand starts as fast as a real bench would.
REPO_ROOT = Path(__file__).resolve().parents[1]
WORK_FILE = "work.json"
BLOCK = b"\x5a" * 4096  # hashed over and over: pure CPU work
SLOWDOWNS: dict[str, float] = {"A/A": 1.0, "+5%": 1.05, "+10%": 1.10}
VERDICTS: tuple[str, ...] = ("PASS", "FAIL", "INCONCLUSIVE")


def work(iterations: int) -> None:
    """``iterations`` SHA-256 digests of a 4 KiB block."""
    for _ in range(iterations):
        hashlib.sha256(BLOCK).digest()


def bench(argv: list[str]) -> int:
    """The synthetic bench: ``work.json`` in the current directory (the worktree) sets the work per step."""
    parser = argparse.ArgumentParser(prog="ab_validity.py bench")
    parser.add_argument("--stream", required=True)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--measure", type=int, default=20)
    args = parser.parse_args(argv)
    iterations = int(json.loads(Path(WORK_FILE).read_text())["iterations"])
    head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True)
    sha = head.stdout.strip()
    with open(args.stream, "w", buffering=1) as stream:
        def emit(record: dict) -> None:
            stream.write(json.dumps(record) + "\n")

        emit({"kind": "header", "protocol": 1,
              "case": {"algo": "synthetic", "task": "sha256", "sim": "none", "variant": "manager"},
              "params": {"num_envs": 1, "warmup": args.warmup, "measure": args.measure},
              "audit": {"module_file": os.path.abspath(WORK_FILE), "git_sha": sha, "env_class": "Sha256Work",
                        "iterations": iterations}})
        started, cpu_started = time.perf_counter(), time.process_time()
        for step in range(args.warmup + args.measure):
            if step == args.warmup:
                started = time.perf_counter()
            if step == args.warmup:
                cpu_started = time.process_time()
            t0, c0 = time.perf_counter(), time.process_time()
            work(iterations)
            phases = {"physics_ms": (time.perf_counter() - t0) * 1000,
                      "cpu_ms": (time.process_time() - c0) * 1000}
            emit({"kind": "step", "step": step, "warmup": step < args.warmup, "phases": phases})
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
        means = {"physics_ms": 1000 * wall / args.measure, "cpu_ms": 1000 * cpu / args.measure}
        emit({"kind": "summary", "throughput": args.measure / wall, "measure_wall_s": wall,
              "phase_means_ms": means})
    return 0


def calibrate(step_ms: float) -> int:
    """Iterations of ``work`` that take about ``step_ms`` here."""
    n = 200
    t0 = time.perf_counter()
    work(n)
    return max(1, round(n * step_ms / 1000 / (time.perf_counter() - t0)))


def make_repo(root: Path, iterations: int) -> dict[str, str]:
    """One commit of ``work.json`` per slowdown; condition -> SHA (A/A uses the baseline's)."""
    sys.path.insert(0, str(REPO_ROOT / "tests" / "orchestrator"))
    from fakebench.fakerepo import git

    repo = root / "synthetic"
    repo.mkdir()
    git(repo, "init", "-q")
    shas = {}
    for name, factor in SLOWDOWNS.items():
        if factor == 1.0 and shas:
            continue
        (repo / WORK_FILE).write_text(json.dumps({"iterations": round(iterations * factor)}) + "\n")
        git(repo, "add", WORK_FILE)
        git(repo, "commit", "-q", "-m", f"work x{factor}")
        shas[name] = git(repo, "rev-parse", "HEAD")
    return {name: shas.get(name, shas["A/A"]) for name in SLOWDOWNS}


def write_sweep(path: Path, name: str, repo: Path, base: str, cand: str, args: argparse.Namespace) -> None:
    import yaml

    sweep = {
        "name": name, "repo": str(repo), "sides": {"base": {"ref": base}, "cand": {"ref": cand}},
        "baseline": "base", "cases": ["synthetic/sha256/none"],
        "known": {"algos": [], "tasks": [], "sims": [], "variants": []},
        "command": ["{python}", str(Path(__file__).resolve()), "bench", "--stream", "{stream}",
                    "--warmup", "{warmup}", "--measure", "{measure}"],
        "params": {"num_envs": 1, "warmup": 2, "measure": args.measure, "threads": 1},
        "repeats": args.repeats, "order": "interleaved", "timeout_s": 120,
        "gates": [{"metric": "throughput", "min_ratio": args.min_ratio, "confidence": args.confidence},
                  {"metric": "cpu_ms", "max_ratio": args.cpu_max_ratio, "confidence": args.confidence}],
        "results": str(path.parent / "results"),
    }
    path.write_text(yaml.safe_dump(sweep))


@dataclass
class Outcome:
    """One gate's verdict in one sweep."""

    condition: str
    metric: str
    verdict: str
    ratio: float
    low: float
    high: float
    p_value: float


def run_one(sweep_yaml: Path, scheduler: str, condition: str) -> list[Outcome]:
    """One ``shasweep run``: each gate's verdict and interval, checked against the exit code."""
    from orchestrator.analysis.report_model import make_report
    from orchestrator.cli.main import main as shasweep
    from orchestrator.errors import EXIT_GATE_FAILED, EXIT_GATE_INCONCLUSIVE, EXIT_OK
    from orchestrator.store.records import latest_sweep_id

    with contextlib.redirect_stdout(io.StringIO()):
        code = shasweep(["run", str(sweep_yaml), "--scheduler", scheduler, "--no-progress"])
    if code not in (EXIT_OK, EXIT_GATE_FAILED, EXIT_GATE_INCONCLUSIVE):
        raise SystemExit(f"{condition}: shasweep run exited {code} (a run failed?)")
    results = sweep_yaml.parent / "results"
    report = make_report(results, latest_sweep_id(results))
    if code != report.exit_code:
        raise SystemExit(f"{condition}: run exited {code}, its stored report says {report.exit_code}")
    return [Outcome(condition, g.metric, g.verdict, g.ratio, g.comparison.low, g.comparison.high,
                    g.comparison.p_value) for g in report.gates]


def summarize(outcomes: list[Outcome], args: argparse.Namespace) -> str:
    """Per gate metric and condition: verdict rates, median ratio, CI width and p; then the targets."""
    lines = [f"{'gate':<11} {'condition':<10} {'K':>3} {'FAIL (flagged)':>15} {'PASS':>6} {'INCONCL.':>9} "
             f"{'median ratio':>13} {'median CI width':>16} {'median p':>9}"]
    for metric, condition in [(m, c) for m in dict.fromkeys(o.metric for o in outcomes) for c in SLOWDOWNS]:
        mine = [o for o in outcomes if o.condition == condition and o.metric == metric]
        rate = {v: sum(o.verdict == v for o in mine) / len(mine) for v in VERDICTS}
        lines.append(f"{metric:<11} {condition:<10} {len(mine):>3} {100 * rate['FAIL']:>14.0f}% "
                     f"{100 * rate['PASS']:>5.0f}% {100 * rate['INCONCLUSIVE']:>8.0f}% "
                     f"{statistics.median(o.ratio for o in mine):>13.4f} "
                     f"{statistics.median(o.high - o.low for o in mine):>16.4f} "
                     f"{statistics.median(o.p_value for o in mine):>9.3g}")
    for metric, bound in (("throughput", f">= {args.min_ratio}x"), ("cpu_ms", f"<= {args.cpu_max_ratio}x")):
        def flagged(condition: str, gate: str = metric) -> float:
            mine = [o for o in outcomes if o.condition == condition and o.metric == gate]
            return 100 * sum(o.verdict == "FAIL" for o in mine) / len(mine)

        lines.append(f"{metric} {bound}: false alarms (A/A FAIL) {flagged('A/A'):.0f}% (target <= 5%), "
                     f"+5% detected (FAIL) {flagged('+5%'):.0f}% (target >= 95%), +10% detected "
                     f"{flagged('+10%'):.0f}%")
    lines.append(f"{100 * args.confidence:g}% bootstrap intervals, {args.repeats} interleaved repeats a side")
    return "\n".join(lines)


def _loads(loads: tuple[float, float, float]) -> str:
    return "/".join(f"{v:.1f}" for v in loads)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--k", type=int, default=10, help="sweeps per condition (default 10)")
    parser.add_argument("--repeats", type=int, default=5, help="interleaved rounds per sweep (default 5)")
    parser.add_argument("--min-ratio", type=float, default=0.97, help="the throughput gate (default 0.97)")
    parser.add_argument("--cpu-max-ratio", type=float, default=1.03, help="the cpu_ms gate (default 1.03)")
    parser.add_argument("--confidence", type=float, default=0.95,
                        help="of the gate's interval (default 0.95)")
    parser.add_argument("--step-ms", type=float, default=20.0, help="baseline work per step (default 20 ms)")
    parser.add_argument("--measure", type=int, default=20, help="measured steps per run (default 20)")
    parser.add_argument("--keep", type=Path, metavar="DIR",
                        help="work (repo, results) in DIR, which must not exist, and keep it")
    return parser.parse_args()


def main() -> int:
    from orchestrator.dispatch.cluster import connect

    args = parse_args()
    iterations = calibrate(args.step_ms)
    with contextlib.ExitStack() as stack:
        if args.keep:
            args.keep.mkdir(parents=True)
        root = args.keep or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="ab_validity-")))
        os.environ["SHASWEEP_HOME"] = str(root / "home")  # worktrees and logs; inherited by the worker
        shas = make_repo(root, iterations)
        print(f"work: {iterations} SHA-256 digests of 4 KiB per baseline step (~{args.step_ms:g} ms), "
              f"{args.measure} measured steps per run; {args.k} sweeps per condition", flush=True)
        sweeps = {condition: root / f"sweep-{i}.yaml" for i, condition in enumerate(shas)}
        for i, (condition, sha) in enumerate(shas.items()):
            write_sweep(sweeps[condition], f"validity-{i}", root / "synthetic", shas["A/A"], sha, args)
        outcomes = []
        started, load_before = time.perf_counter(), os.getloadavg()
        with connect(None) as conn:
            for k in range(args.k):
                for condition, path in sweeps.items():
                    for outcome in run_one(path, conn.client.scheduler.address, condition):
                        outcomes.append(outcome)
                        print(f"[{k + 1}/{args.k}] {condition:<5} {outcome.metric:<10} {outcome.verdict:<12} "
                              f"ratio {outcome.ratio:.4f} CI [{outcome.low:.4f}, {outcome.high:.4f}] "
                              f"p {outcome.p_value:.3g}", flush=True)
        print(f"\n{args.k * len(sweeps)} sweeps in {time.perf_counter() - started:.0f} s; load average "
              f"(1, 5, 15 min) before {_loads(load_before)}, after {_loads(os.getloadavg())}"
              + (f"; kept under {root}" if args.keep else ""))
        print(summarize(outcomes, args))
    return 0


if __name__ == "__main__":
    sys.exit(bench(sys.argv[2:]) if sys.argv[1:2] == ["bench"] else main())
