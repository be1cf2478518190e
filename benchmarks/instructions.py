"""Instruction counts against their targets (docs/design.md, "Instruction counts"): A/A counts equal
within 0.1 % across rounds and processes, and a 1 % change of work detected in a single round, in
``--sweeps`` sweeps of 10. Counts do not depend on the host's load, so this may run beside anything.

The suite is the generated suitelib's pytest-benchmark suite (``examples/make_suite_repo.py``);
``benchmarks/known_truth.py`` adds 1 % of ``checksum``'s instructions per call to it (calibrated
under callgrind) on one branch and changes nothing on another. Each sweep is a real ``shasweep
run`` of three sides, ``base``, ``slow`` (1 %) and ``aa``, in lockstep with ``instrument:
valgrind``, one round (``--rounds``, default 1): every side's suite runs once more under callgrind.
Printed per sweep: each case's count ratio against ``base`` for ``slow`` and ``aa``; then the worst
A/A deviation over every case, side and sweep (different processes, different rounds), how many
sweeps saw the 1 % case beyond the 0.5 % floor (``analysis.instructions.COUNT_FLOOR``) in their
single round, how far the slowed commit's other cases moved (code added beside them), the verdicts
of an ``instructions`` gate where the rounds allow one, and the wall time of a sweep.

Usage: python benchmarks/instructions.py --out DIR [--sweeps 10] [--rounds 1]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from known_truth import main as known_truth  # noqa: E402
from make_suite_repo import make_suite_repo  # noqa: E402

from orchestrator.analysis.instructions import COUNT_FLOOR  # noqa: E402

SLOWED = "test_suitelib.py::test_suitelib[checksum]"
PERCENT = 1.0


def sweep_file(out: Path, truth: dict, rounds: int) -> Path:
    """The pytest-benchmark example in lockstep, three sides, instruction counts on."""
    example = ROOT / "examples" / "pytest-benchmark"
    spec = yaml.safe_load((example / "sweep.yaml").read_text())
    spec.update(name="instructions", cases="discover", repeats=max(2, rounds) if rounds > 1 else 1,
                order="lockstep", instrument="valgrind", aa=True,
                lockstep={"blocks": 2, "block_steps": 2, "step_ms": 5},
                sides={"base": {"ref": truth["base"]}, "slow": {"ref": truth["slow"]["sha"]},
                       "aa": {"ref": truth["aa"]["sha"]}}, baseline="base",
                gates=[{"metric": "instructions", "max_ratio": 1.005}])
    spec["command"] = [arg.replace("{sweep_dir}", str(example)) for arg in spec["command"]]
    path = out / "sweep.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def run_sweep(path: Path, repo: Path, results: Path, home: Path) -> tuple[pd.DataFrame, float, dict]:
    env = {**os.environ, "SHASWEEP_HOME": str(home), "PYTHONPATH": str(ROOT)}
    began = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "orchestrator.cli", "run", str(path), f"repo={repo}",
                           f"results={results}", "--no-progress"], env=env, capture_output=True, text=True)
    wall = time.monotonic() - began
    runs = pd.read_parquet(results / "runs")
    verdicts = {}
    found = list((results / "reports").glob("*.verdicts.json"))
    if found:
        for row in json.loads(found[0].read_text())["verdicts"]:
            verdicts[(row["case"], row["side"])] = row["verdict"]
    if not (runs["status"] == "ok").all():
        raise SystemExit(f"a run failed: {runs.loc[runs['status'] != 'ok', 'error'].tolist()}\n{done.stderr}")
    return runs, wall, verdicts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--sweeps", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    repo = args.out / "suite-repo"
    if not repo.exists():
        make_suite_repo(repo)
    truth = known_truth([str(ROOT / "examples" / "pytest-benchmark" / "sweep.yaml"), str(repo), "--case",
                         SLOWED, "--percent", str(PERCENT), "--calibrate", "instructions", "--prefix", "one"])
    path = sweep_file(args.out, truth, args.rounds)
    worst_aa, worst_other, detected, walls, gate_verdicts, base_counts = 0.0, 0.0, 0, [], [], {}
    for number in range(args.sweeps):
        runs, wall, verdicts = run_sweep(path, repo, args.out / f"results-{number}", args.out / "home")
        walls.append(wall)
        counts = runs.groupby(["case", "side", "repeat"])["instructions"].first().unstack("side")
        for (case, repeat), row in counts.iterrows():
            slow, aa = row["slow"] / row["base"], row["aa"] / row["base"]
            worst_aa = max(worst_aa, abs(aa - 1))
            worst_other = worst_other if case == SLOWED else max(worst_other, abs(slow - 1))
            base_counts.setdefault(case, []).append(row["base"])
            print(f"sweep {number} round {repeat} {case}: slow/base {slow:.5f}  aa/base {aa:.6f}")
        slowed = counts.xs(SLOWED, level="case")
        detected += bool(((slowed["slow"] / slowed["base"] - 1) > COUNT_FLOOR).all())
        gate_verdicts.append(verdicts.get((SLOWED, "slow")))
    spread = max((max(v) / min(v) - 1) for v in base_counts.values())
    print(f"\nA/A: the largest |aa/base - 1| over every case, round and sweep: {worst_aa:.2e} "
          f"(target < 0.001); a base count's spread across sweeps (processes): {spread:.2e}")
    print(f"1 % change ({SLOWED}): beyond the {COUNT_FLOOR:g} floor in every round of {detected} of "
          f"{args.sweeps} sweeps (target: all); the slowed commit's other cases moved at most "
          f"{worst_other:.2e}")
    if args.rounds > 1:
        print(f"instructions gate (<= 1.005x) on the 1 % case: {gate_verdicts}")
    print(f"wall per sweep: median {sorted(walls)[len(walls) // 2]:.0f} s "
          f"(min {min(walls):.0f}, max {max(walls):.0f}); truth: {truth['iterations']} iterations, "
          f"{truth['per_call']:.4g} instructions per call at base")
    if not math.isfinite(worst_aa):
        raise SystemExit("no counts")


if __name__ == "__main__":
    main()
