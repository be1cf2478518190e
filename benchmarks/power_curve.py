"""Power curve of a gate and the cost of computing verdicts (seeded simulation, CPU-cheap).

1. For run noise CV 1-5 % and true slowdowns of 0-10 % against a ``throughput >= MIN_RATIO`` gate
   at 95 %: the share of simulated sweeps FAILed, PASSed, and the mean rounds used, for a fixed sweep
   of REPEATS rounds and an adaptive one (REPEATS to MAX_REPEATS), paired by round. The rule is the
   one reports apply (``orchestrator.analysis.power.decide``).
2. Gate verdicts of a 100-cell sweep (50 cases x 2 sides against a baseline, 10 rounds, one gate)
   through the report's comparer and ``verdicts.evaluate_gates``, fixed and adaptive: wall time
   (the run audit before it is not timed here: it is ``orchestrator_overhead.py``'s report figure).

Usage: python benchmarks/power_curve.py [--sweeps 2000] [--repeats 3] [--max-repeats 30] [--min-ratio 0.97]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from orchestrator.analysis import power
from orchestrator.analysis.report_model import sweep_comparer
from orchestrator.analysis.sequential import Looks
from orchestrator.analysis.verdicts import Verdict, evaluate_gates
from orchestrator.spec.schema import GateSpec, Order, SweepSpec

CVS = (0.01, 0.015, 0.02, 0.03, 0.05)
SLOWDOWNS = (0.0, 0.02, 0.03, 0.05, 0.07, 0.10)


def power_table(sweeps: int, looks: Looks, min_ratio: float) -> list[str]:
    rng = np.random.default_rng(0)
    lines = ["| run CV | true ratio | fixed FAIL | fixed PASS | adaptive FAIL | adaptive PASS "
             "| mean rounds |",
             "|---|---|---|---|---|---|---|"]
    for cv in CVS:
        for slowdown in SLOWDOWNS:
            cand, base = power.simulate(rng, sweeps, looks.last, cv=cv, true_ratio=1 - slowdown)
            fixed = power.decide(cand, base, Looks(looks.first, looks.first), min_ratio=min_ratio)
            adaptive = power.decide(cand, base, looks, min_ratio=min_ratio)
            lines.append(f"| {100 * cv:g} % | {1 - slowdown:.2f} | {fixed.rate(Verdict.FAIL):.0%} | "
                         f"{fixed.rate(Verdict.PASS):.0%} | {adaptive.rate(Verdict.FAIL):.0%} | "
                         f"{adaptive.rate(Verdict.PASS):.0%} | {adaptive.rounds.mean():.1f} |")
    return lines


def verdict_time(looks: Looks) -> float:
    rng = np.random.default_rng(1)
    cases = [f"sac/task{i}/mujoco" for i in range(50)]
    sides = ["base", "b", "c"]
    runs = pd.DataFrame([{"case": c, "side": s, "repeat": r,
                          "throughput": float(100 * np.exp(rng.normal(0, 0.02)))}
                         for c in cases for s in sides for r in range(looks.last)])
    spec = SweepSpec(name="power", baseline="base", cases=cases, order=Order.interleaved)
    started = time.perf_counter()
    verdicts = evaluate_gates([GateSpec(metric="throughput", min_ratio=0.97)], cases, sides,
                              sweep_comparer(spec, runs), looks)
    assert len(verdicts) == 100
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sweeps", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--max-repeats", type=int, default=30)
    parser.add_argument("--min-ratio", type=float, default=0.97)
    args = parser.parse_args()
    looks = Looks(args.repeats, args.max_repeats)
    print(f"gate throughput >= {args.min_ratio} at 95 %, paired rounds, {args.sweeps} sweeps per row; "
          f"fixed: {args.repeats} rounds, adaptive: {args.repeats} to {args.max_repeats}")
    print("\n".join(power_table(args.sweeps, looks, args.min_ratio)))
    print(f"\nverdicts of a 100-cell sweep of 10 rounds: fixed {verdict_time(Looks(10, 10)):.2f} s, "
          f"adaptive (looks 3..10) {verdict_time(Looks(3, 10)):.2f} s")


if __name__ == "__main__":
    main()
