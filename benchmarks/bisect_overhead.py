"""Bisect overhead: how much of a ``shasweep bisect``'s wall time is not spent in bench runs?

A temporary git repository holds ``--commits`` commits of a synthetic bench's speed
(``model.json``: ms per step; a 10 % slower step from ``--step-at`` on). The bench is this file's
``bench`` subcommand, run in the SHA's worktree: it sleeps the modelled time per step and reports
it, so every run takes real time and the verdicts do not depend on the machine's load. The bisect
goes through the real path (``shasweep bisect``: spec, one embedded Dask cluster, a recorded sweep
per step, Parquet, reports, the bisect record and page). Overhead = bisect wall time minus the sum
of the runs' ``wall_s`` (each bench process, start to exit), as a fraction of the wall time; the
target is <= 2 % at realistic run lengths (runs of minutes). Figures measured on a loaded machine
say nothing: run it on an idle one.

Usage: python benchmarks/bisect_overhead.py [--commits 16] [--step-at 11] [--repeats 3]
       [--measure 20] [--step-ms 50] [--keep DIR]
       python benchmarks/bisect_overhead.py bench --stream PATH ...   (the synthetic bench itself)
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
MODEL_FILE = "model.json"


def bench(argv: list[str]) -> int:
    """The synthetic bench: ``model.json`` in the current directory (the worktree) sets ms per step."""
    parser = argparse.ArgumentParser(prog="bisect_overhead.py bench")
    parser.add_argument("--stream", required=True)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--measure", type=int, default=20)
    args = parser.parse_args(argv)
    step_ms = float(json.loads(Path(MODEL_FILE).read_text())["step_ms"])
    head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True)
    with open(args.stream, "w", buffering=1) as stream:
        def emit(record: dict) -> None:
            stream.write(json.dumps(record) + "\n")

        emit({"kind": "header", "protocol": 1,
              "case": {"algo": "synthetic", "task": "sleep", "sim": "none", "variant": "manager"},
              "params": {"num_envs": 1, "warmup": args.warmup, "measure": args.measure},
              "audit": {"module_file": os.path.abspath(MODEL_FILE), "git_sha": head.stdout.strip(),
                        "env_class": "SleepWork"}})
        for step in range(args.warmup + args.measure):
            time.sleep(step_ms / 1000)
            emit({"kind": "step", "step": step, "warmup": step < args.warmup,
                  "phases": {"physics_ms": step_ms}})
        wall = args.measure * step_ms / 1000
        emit({"kind": "summary", "throughput": args.measure / wall, "measure_wall_s": wall,
              "phase_means_ms": {"physics_ms": step_ms}})
    return 0


def make_repo(root: Path, commits: int, step_at: int, step_ms: float) -> list[str]:
    """``commits`` commits of ``model.json``, 10 % slower from ``step_at`` on; their SHAs, oldest first."""
    sys.path.insert(0, str(REPO_ROOT / "tests" / "orchestrator"))
    from fakebench.fakerepo import git

    repo = root / "linear"
    repo.mkdir()
    git(repo, "init", "-q")
    shas = []
    for index in range(commits):
        ms = step_ms / 0.9 if index >= step_at else step_ms
        (repo / MODEL_FILE).write_text(json.dumps({"commit": index, "step_ms": ms}) + "\n")
        git(repo, "add", MODEL_FILE)
        git(repo, "commit", "-q", "-m", f"commit {index}: {ms:.2f} ms per step")
        shas.append(git(repo, "rev-parse", "HEAD"))
    return shas


def write_sweep(path: Path, repo: Path, args: argparse.Namespace) -> None:
    import yaml

    sweep = {
        "name": "overhead", "repo": str(repo), "cases": ["synthetic/sleep/none"],
        "known": {"algos": [], "tasks": [], "sims": [], "variants": []},
        "command": ["{python}", str(Path(__file__).resolve()), "bench", "--stream", "{stream}",
                    "--warmup", "{warmup}", "--measure", "{measure}"],
        "params": {"num_envs": 1, "warmup": 1, "measure": args.measure, "threads": 1},
        "repeats": args.repeats, "order": "interleaved", "timeout_s": 600,
        "gates": [{"metric": "throughput", "min_ratio": 0.95}], "metrics": ["throughput"],
        "results": str(path.parent / "results"),
    }
    path.write_text(yaml.safe_dump(sweep))


def main(argv: list[str]) -> int:
    if argv[:1] == ["bench"]:
        return bench(argv[1:])
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--commits", type=int, default=16)
    parser.add_argument("--step-at", type=int, default=11)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--measure", type=int, default=20)
    parser.add_argument("--step-ms", type=float, default=50.0)
    parser.add_argument("--keep", type=Path, help="keep the repository and results here")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO_ROOT))
    from orchestrator.cli.main import main as shasweep
    from orchestrator.store.query import read_runs

    with contextlib.ExitStack() as stack:
        root = args.keep or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bisect-overhead-")))
        root.mkdir(parents=True, exist_ok=True)
        os.environ.setdefault("SHASWEEP_HOME", str(root / "home"))
        shas = make_repo(root, args.commits, args.step_at, args.step_ms)
        sweep = root / "bisect.yaml"
        write_sweep(sweep, root / "linear", args)
        started = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()) as out:
            code = shasweep(["bisect", str(sweep), "--good", shas[0], "--bad", shas[-1], "--no-progress"])
        wall = time.perf_counter() - started
        runs = read_runs(root / "results", columns=["sweep_id", "wall_s", "reused_from"])  # all files
        reused = int(runs["reused_from"].notna().sum())
        runs = runs[runs["reused_from"].isna()]  # a reused run's wall_s was spent by an earlier step
        in_runs = float(runs["wall_s"].sum())
        in_sweeps = sum(float(json.loads(path.read_text())["wall_s"])  # each step's run_sweep call
                        for path in (root / "results" / "sweeps").glob("*.json"))
        found = f"first bad commit: {shas[args.step_at]}" in out.getvalue()
        print(f"exit {code}; first bad commit found: {found}; {runs['sweep_id'].nunique()} step sweeps, "
              f"{len(runs)} runs measured, {reused} reused")
        print(f"bisect wall {wall:.2f} s, in bench runs {in_runs:.2f} s, overhead {wall - in_runs:.2f} s "
              f"= {100 * (wall - in_runs) / wall:.1f} % of the wall time "
              f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")
        print(f"  inside the step sweeps besides runs (client connect, host record, dispatch): "
              f"{in_sweeps - in_runs:.2f} s; outside them (cluster start, git, reports, record, page): "
              f"{wall - in_sweeps:.2f} s")
    return 0 if found else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
