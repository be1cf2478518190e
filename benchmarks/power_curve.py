"""What a gate can decide under each sequential boundary, and the cost of computing verdicts (seeded
simulation, CPU-bound; only the last section is a timing).

1. Boundaries side by side: the adaptive sweep (REPEATS to MAX_REPEATS rounds) under ``spending:
   even``, ``pocock`` (the default) and ``obrien-fleming``, gate ``throughput >= MIN_RATIO`` at 95 %,
   for run noise of each model of ``power.simulate`` (lognormal offsets, bursts, heavy tails), paired
   and unpaired, CV 1.5 % and 3 %, a true 10 % slowdown (ratio 1/1.1), A/A (1.0) and the truth on
   the bound (any PASS or FAIL there is wrong): PASS and FAIL shares and mean rounds, and how many
   fewer rounds the default needs than the even split.
2. The equivalence gate ``within: 1 - MIN_RATIO`` under the default boundary, next to the same
   sweeps' ``min_ratio`` gate: with the truth on either bound, A/A and the slowdown.
3. The power curve of the default boundary: fixed REPEATS rounds against adaptive, CV 1-5 %, true
   slowdowns of 0-10 %, paired lognormal noise.
4. A ``shasweep ci`` sweep (``session.ci_design``): looks from round 2 to CI_LOOKS, the default gate
   ``time <= 1.02x`` at ``1 - 0.05 / CI_CASES``, Pocock against O'Brien-Fleming (the ci design's
   boundary) on the same sweeps, paired, a 5 % slowdown, an unchanged head and the truth on the bound.
5. Gate verdicts of a 100-cell sweep (50 cases x 2 sides against a baseline, 10 rounds, one gate)
   through the report's comparer and ``verdicts.evaluate_gates``, fixed and adaptive: wall time.

The rule is the one reports apply (``orchestrator.analysis.power.decide``, checked against
``verdicts.gate_verdict`` in the tests). Usage: python benchmarks/power_curve.py [--sweeps 2000]
[--repeats 3] [--max-repeats 30] [--min-ratio 0.97] [--no-timing]
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
from orchestrator.session.ci_design import ALPHA, DEFAULT_MAX_RATIO, MIN_ROUNDS
from orchestrator.spec.schema import GateSpec, Order, Spending, SweepSpec

CVS = (0.01, 0.015, 0.02, 0.03, 0.05)
SLOWDOWNS = (0.0, 0.02, 0.03, 0.05, 0.07, 0.10)
DESIGNS = (Spending.even, Spending.pocock, Spending.obrien_fleming)
SLOWER = 1 / 1.1
CI_CASES, CI_LOOKS = 15, 27  # benchmarks/ci_detection.py's suite and the rounds its 10-minute budget held


def cell(decided: power.Decisions) -> str:
    """``PASS% / FAIL% / mean rounds``."""
    return (f"{decided.rate(Verdict.PASS):.1%} / {decided.rate(Verdict.FAIL):.1%} / "
            f"{decided.rounds.mean():.1f}")


def settings(min_ratio: float, truths: tuple[float, ...]):
    """(noise, paired, cv, truth, seed) of every simulated setting."""
    seed = 0
    for noise in power.NOISES:
        for paired in (True, False):
            for cv in (0.015, 0.03):
                for truth in truths:
                    seed += 1
                    yield noise, paired, cv, truth, seed


def designs_table(sweeps: int, first: int, last: int, min_ratio: float) -> list[str]:
    gate = GateSpec(metric="throughput", min_ratio=min_ratio)
    lines = ["| noise | pairing | run CV | true ratio | " + " | ".join(d.value for d in DESIGNS)
             + " | pocock's rounds vs even |", "|---|---|---|---|" + "---|" * (len(DESIGNS) + 1)]
    for noise, paired, cv, truth, seed in settings(min_ratio, (SLOWER, 1.0, min_ratio)):
        cand, base = power.simulate(np.random.default_rng(seed), sweeps, last, cv=cv, true_ratio=truth,
                                    paired=paired, noise=noise)
        decided = {d: power.decide(cand, base, Looks(first, last, d), gate, paired=paired) for d in DESIGNS}
        fewer = 1 - decided[Spending.pocock].rounds.mean() / decided[Spending.even].rounds.mean()
        lines.append(f"| {noise} | {'paired' if paired else 'unpaired'} | {100 * cv:g} % | {truth:.3f} | "
                     + " | ".join(cell(decided[d]) for d in DESIGNS) + f" | {-fewer:+.0%} |")
    return lines


def within_table(sweeps: int, first: int, last: int, min_ratio: float) -> list[str]:
    within = GateSpec(metric="throughput", within=round(1 - min_ratio, 6))
    bound = GateSpec(metric="throughput", min_ratio=min_ratio)
    looks = Looks(first, last)
    lines = [f"| noise | pairing | run CV | true ratio | {within.describe()} | >= {min_ratio:g}x |",
             "|---|---|---|---|---|---|"]
    for noise, paired, cv, truth, seed in settings(min_ratio, (SLOWER, 1.0, min_ratio, 2 - min_ratio)):
        cand, base = power.simulate(np.random.default_rng(100 + seed), sweeps, last, cv=cv, true_ratio=truth,
                                    paired=paired, noise=noise)
        lines.append(f"| {noise} | {'paired' if paired else 'unpaired'} | {100 * cv:g} % | {truth:.3f} | "
                     f"{cell(power.decide(cand, base, looks, within, paired=paired))} | "
                     f"{cell(power.decide(cand, base, looks, bound, paired=paired))} |")
    return lines


def power_table(sweeps: int, looks: Looks, min_ratio: float) -> list[str]:
    rng = np.random.default_rng(0)
    gate = GateSpec(metric="throughput", min_ratio=min_ratio)
    lines = ["| run CV | true ratio | fixed FAIL | fixed PASS | adaptive FAIL | adaptive PASS "
             "| mean rounds |",
             "|---|---|---|---|---|---|---|"]
    for cv in CVS:
        for slowdown in SLOWDOWNS:
            cand, base = power.simulate(rng, sweeps, looks.last, cv=cv, true_ratio=1 - slowdown)
            fixed = power.decide(cand, base, Looks(looks.first, looks.first), gate)
            adaptive = power.decide(cand, base, looks, gate)
            lines.append(f"| {100 * cv:g} % | {1 - slowdown:.2f} | {fixed.rate(Verdict.FAIL):.0%} | "
                         f"{fixed.rate(Verdict.PASS):.0%} | {adaptive.rate(Verdict.FAIL):.0%} | "
                         f"{adaptive.rate(Verdict.PASS):.0%} | {adaptive.rounds.mean():.1f} |")
    return lines


def ci_table(sweeps: int) -> list[str]:
    gate = GateSpec(metric="time_ms", max_ratio=DEFAULT_MAX_RATIO, confidence=1 - ALPHA / CI_CASES)
    designs = (Spending.pocock, Spending.obrien_fleming)
    lines = ["| noise | run CV | true ratio | " + " | ".join(d.value for d in designs) + " |",
             "|---|---|---|" + "---|" * len(designs)]
    seed = 200
    for noise in power.NOISES:
        for cv in (0.02, 0.03):
            for truth in (1.05, 1.0, DEFAULT_MAX_RATIO):
                seed += 1
                cand, base = power.simulate(np.random.default_rng(seed), sweeps, CI_LOOKS, cv=cv,
                                            true_ratio=truth, noise=noise)
                decided = [power.decide(cand, base, Looks(MIN_ROUNDS, CI_LOOKS, d), gate) for d in designs]
                row = " | ".join(map(cell, decided))
                lines.append(f"| {noise} | {100 * cv:g} % | {truth:.3f} | {row} |")
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
    parser.add_argument("--no-timing", action="store_true", help="leave out section 5 (a wall time)")
    args = parser.parse_args()
    first, last = args.repeats, args.max_repeats
    print(f"{args.sweeps} simulated sweeps per row; adaptive: {first} to {last} rounds; each cell "
          "PASS / FAIL / mean rounds\n\n1. gate throughput >= "
          f"{args.min_ratio:g}x at 95 % under each boundary")
    print("\n".join(designs_table(args.sweeps, first, last, args.min_ratio)))
    print("\n2. the equivalence gate and the bound gate on the same sweeps (default boundary)")
    print("\n".join(within_table(args.sweeps, first, last, args.min_ratio)))
    print(f"\n3. power curve of the default boundary, paired lognormal noise; fixed: {first} rounds")
    print("\n".join(power_table(args.sweeps, Looks(first, last), args.min_ratio)))
    print(f"\n4. a shasweep ci sweep: looks {MIN_ROUNDS}..{CI_LOOKS}, gate time <= {DEFAULT_MAX_RATIO:g}x at "
          f"1 - {ALPHA:g}/{CI_CASES}, paired")
    print("\n".join(ci_table(args.sweeps)))
    if not args.no_timing:
        print(f"\n5. verdicts of a 100-cell sweep of 10 rounds: fixed {verdict_time(Looks(10, 10)):.2f} s, "
              f"adaptive (looks 3..10) {verdict_time(Looks(3, 10)):.2f} s")


if __name__ == "__main__":
    main()
