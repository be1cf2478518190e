"""``shasweep ci``'s detection rate: does one command, from a fresh clone and with no YAML, FAIL a
5 % slowdown of one benchmark of a 15-benchmark pytest-benchmark suite within a 10-minute budget,
and never FAIL an unchanged head?

A repository made by examples/make_ci_repo.py (15 benchmarks; branch ``slower``: one kernel,
``poly``, does ``--slowdown`` percent more work; branch ``unchanged``: a README edit) is cloned
afresh for every run, as a CI job would, and ``shasweep ci --budget BUDGET`` runs in the clone with
a home of its own (no earlier results: the rounds are sized from the suite, as on a first CI run).
It prints one line per run (branch, exit code, verdict, rounds and why they stopped, the slowed
case's ratio and decided interval, wall time) and then the rates: the target is exit 1 in at least
9 of 10 ``slower`` runs and exit 0 or 4 (never 1) in every ``unchanged`` run. Figures measured on a
loaded machine say nothing: run it on an idle one.

With ``--instrument valgrind`` each run counts instructions too, and the design's default gates
bound them as they bound the time (docs/ci.md, "The design"); the counts do not depend on
the load, so such runs may share the machine.

Usage: python benchmarks/ci_detection.py [--runs 10] [--unchanged 3] [--budget 10m] [--slowdown 5]
       [--instrument valgrind] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "examples"))
from make_ci_repo import SLOWED, make_ci_repo  # noqa: E402

from orchestrator.analysis.verdicts import bounds  # noqa: E402


def one_run(origin: Path, work: Path, branch: str, budget: str, extra: list[str]) -> dict:
    """A fresh clone of ``branch`` and ``shasweep ci`` in it: what it decided."""
    clone = work / "clone"
    subprocess.run(["git", "clone", "-q", "--branch", branch, f"file://{origin}", str(clone)], check=True)
    env = {**os.environ, "SHASWEEP_HOME": str(work / "home"),
           "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")])}
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "orchestrator.cli", "ci", "--budget", budget, *extra],
                          cwd=clone, env=env, capture_output=True, text=True)
    wall = time.monotonic() - started
    values_file = clone / ".shasweep" / "ci" / "outputs.env"
    lines = values_file.read_text().splitlines() if values_file.exists() else []
    values = dict(line.split("=", 1) for line in lines)
    run = {"branch": branch, "exit": done.returncode, "verdict": values.get("SHASWEEP_VERDICT", "-"),
           "wall_s": wall, "rounds": "-", "slowed": "-"}
    sweep = values.get("SHASWEEP_SWEEP_ID")
    if sweep:
        results = clone / ".shasweep" / "results"
        record = json.loads((results / "sweeps" / f"{sweep}.json").read_text())
        adaptive = record.get("adaptive") or {}
        run["rounds"] = f"{adaptive.get('rounds')} ({adaptive.get('ended')})"
        verdicts = json.loads((results / "reports" / f"{sweep}.verdicts.json").read_text())["verdicts"]
        slowed = [v for v in verdicts if v["case"].endswith(f"test_{SLOWED}")]
        run["slowed"] = "; ".join(f"{v['metric']} {v['verdict']} {v['ratio']:.4f} "
                                  f"{bounds(*(math.inf if x is None else x for x in (v['low'], v['high'])))}"
                                  for v in slowed)  # verdicts.json writes an unbounded end as null
        run["wrong_fails"] = sum(v["verdict"] == "FAIL" for v in verdicts if v not in slowed)
    if done.returncode not in (0, 1, 4):
        run["error"] = done.stderr.strip().splitlines()[-1:] or done.stdout.strip().splitlines()[-1:]
    return run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="runs of the slowed head (default 10)")
    parser.add_argument("--unchanged", type=int, default=3, help="runs of the unchanged head (default 3)")
    parser.add_argument("--budget", default="10m", help="shasweep ci --budget (default 10m)")
    parser.add_argument("--slowdown", type=float, default=5.0, help="percent more work for one kernel")
    parser.add_argument("--keep", type=Path, help="work here and keep it (default: a temporary directory)")
    parser.add_argument("--instrument", choices=("none", "valgrind"), default="none",
                        help="shasweep ci --instrument (valgrind: instructions counted and gated too)")
    args = parser.parse_args()
    base = args.keep or Path(tempfile.mkdtemp(prefix="ci-detection-"))
    origin = base / "origin"
    make_ci_repo(origin, args.slowdown)
    runs = []
    for number, branch in enumerate(["slower"] * args.runs + ["unchanged"] * args.unchanged):
        run = one_run(origin, base / f"run-{number}", branch, args.budget, ["--instrument", args.instrument])
        runs.append(run)
        print(f"{branch:9} exit {run['exit']}  {run['verdict']:12} rounds {run['rounds']}  {SLOWED}: "
              f"{run['slowed']}  other FAILs {run.get('wrong_fails', '-')}  {run['wall_s']:.0f} s"
              + (f"  error: {run['error']}" if "error" in run else ""), flush=True)
    slowed = [r for r in runs if r["branch"] == "slower"]
    unchanged = [r for r in runs if r["branch"] == "unchanged"]
    failed = sum(r["exit"] == 1 for r in slowed)
    quiet = sum(r["exit"] in (0, 4) for r in unchanged)
    wrong = sum(r.get("wrong_fails", 0) for r in runs)
    print(f"slower (+{args.slowdown:g} % on {SLOWED}): exit 1 in {failed} of {len(slowed)} "
          f"(target >= 9 of 10); unchanged: exit 0 or 4 in {quiet} of {len(unchanged)} (target all); "
          f"a FAIL on an unchanged benchmark: {wrong}; budget {args.budget}, instrument {args.instrument}; "
          f"longest run "
          f"{max((r['wall_s'] for r in runs), default=0):.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
