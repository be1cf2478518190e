"""What the orchestrator costs around a bench, measured in one run on this machine.

1. Dispatch: a sweep of RUNS runs of ``true`` (protocol time, one measured run each, one side, serial
   order) through ``shasweep run`` on the embedded cluster, its worktree warm. The orchestrator's time
   per run is the median over consecutive runs of (start of run i+1 - start of run i - the bench's own
   wall of run i, spawn to reap): everything but the bench (target <= 30 ms). Also shown: the median
   gap between one row's ``ended_at`` and the next row's ``started_at``, which leaves out the part of
   the worker's work that lies inside a row's window.
2. The embedded cluster's start, in a fresh process: from ``dispatch.cluster.connect`` (Dask's import
   included) to a bench worker that has answered one task (target <= 2 s).
3. A 1-run sweep end to end: ``shasweep run`` as a fresh process, start to exit, against the bench's
   own wall (target <= 5 x the bench + 4 s).

Run it on an idle machine for figures; ``--smoke`` runs a short version that only proves the script
works (no verdicts).

Usage: python benchmarks/orchestrator_overhead.py [--runs 40] [--smoke]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parents[1]
PER_RUN_TARGET_MS = 30.0
CLUSTER_TARGET_S = 2.0
# The embedded cluster's start as a fresh process sees it: connect (importing Dask), one task answered.
CLUSTER_START = """
import time
began = time.perf_counter()
from orchestrator.dispatch.cluster import connect
from orchestrator.dispatch.host_choice import choose_hosts
with connect(None) as conn:
    (host,) = choose_hosts(conn.client, "one")
    host.submit(conn.client, sum, [1, 2], key="overhead-first-task").result()
    print(time.perf_counter() - began)
"""


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=bench", "-c", "user.email=bench@example.invalid",
                    *args], check=True, capture_output=True)


def bench_repo(root: Path) -> Path:
    """A git repository with one commit: ``true`` needs nothing of it but a SHA to check out."""
    repo = root / "overhead"
    repo.mkdir()
    (repo / "overhead.txt").write_text("orchestrator overhead\n")
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "overhead bench")
    return repo


def run_true(repo: Path, name: str, runs: int) -> tuple[pd.DataFrame, float]:
    """``shasweep run`` of ``runs`` runs of ``true``: its rows in order, and the command's wall seconds."""
    path = repo / f"{name}.yaml"
    path.write_text(yaml.safe_dump({
        "name": name, "sides": {"only": {"ref": "HEAD"}}, "baseline": "only", "cases": ["true"],
        "command": ["true"], "protocol": "time", "params": {"warmup": 0, "measure": 1}, "repeats": runs,
        "order": "serial", "audit_modules": [], "results": f"results-{name}"}))
    began = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "orchestrator.cli", "run", str(path), "--no-progress"],
                          cwd=repo, capture_output=True, text=True)
    wall = time.perf_counter() - began
    if done.returncode != 0:
        sys.exit(f"shasweep run {name} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    rows = pd.read_parquet(repo / f"results-{name}" / "runs").sort_values("order", ignore_index=True)
    if (rows["status"] != "ok").any() or len(rows) != runs:
        sys.exit(f"{name}: expected {runs} ok runs, got {rows[['order', 'status', 'error']].to_string()}")
    return rows, wall


def per_run_ms(rows: pd.DataFrame) -> tuple[float, float]:
    """Median (cycle - bench wall) and median (ended_at -> next started_at), in ms."""
    starts, ends = rows["started_at"], rows["ended_at"]
    cycles = [(starts[i + 1] - starts[i]).total_seconds() * 1000 - rows["wall_ms"][i]
              for i in range(len(rows) - 1)]
    gaps = [(starts[i + 1] - ends[i]).total_seconds() * 1000 for i in range(len(rows) - 1)]
    return statistics.median(cycles), statistics.median(gaps)


def cluster_start_s() -> float:
    done = subprocess.run([sys.executable, "-c", CLUSTER_START], capture_output=True, text=True, check=True)
    return float(done.stdout.split()[-1])


def verdict(ok: bool, smoke: bool) -> str:
    return "(smoke: not judged)" if smoke else ("PASS" if ok else "FAIL")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40,
                        help="runs of `true` in the dispatch sweep (default 40)")
    parser.add_argument("--smoke", action="store_true", help="a short run that only proves the script works")
    args = parser.parse_args()
    runs = 6 if args.smoke else args.runs
    with tempfile.TemporaryDirectory(prefix="shasweep-overhead-") as tmp:
        os.environ.setdefault("SHASWEEP_HOME", str(Path(tmp) / "home"))
        repo = bench_repo(Path(tmp))
        print(f"orchestrator overhead; load average {os.getloadavg()[0]:.2f} at start")
        run_true(repo, "warmup", 1)  # the worktree and the interpreters' caches, as on a bench host in use

        rows, wall = run_true(repo, "one", 1)
        bench_s = rows["wall_ms"][0] / 1000
        limit = 5 * bench_s + 4.0
        print(f"3. 1-run sweep end to end: {wall:.2f} s (bench {bench_s * 1000:.1f} ms; target <= "
              f"{limit:.2f} s) {verdict(wall <= limit, args.smoke)}")

        started = cluster_start_s()
        print(f"2. embedded cluster start (connect, Dask import included, to one task answered): "
              f"{started:.2f} s (target <= {CLUSTER_TARGET_S:g} s) "
              f"{verdict(started <= CLUSTER_TARGET_S, args.smoke)}")

        rows, wall = run_true(repo, "dispatch", runs)
        cycle, gap = per_run_ms(rows)
        print(f"1. dispatch, {runs} runs of `true`: orchestrator time per run {cycle:.1f} ms "
              f"(target <= {PER_RUN_TARGET_MS:g} ms) {verdict(cycle <= PER_RUN_TARGET_MS, args.smoke)}; "
              f"row end -> next row start {gap:.1f} ms; bench wall median {rows['wall_ms'].median():.2f} ms; "
              f"`shasweep run` {wall:.1f} s")


if __name__ == "__main__":
    main()
