"""Why a lockstep round runs every process on the same CPUs (docs/design.md, "Data flow of one sweep",
the round task): two processes of the same code take turns as a lockstep round's sides do, a block of
``--steps`` calls of a pure-Python loop each, ``--blocks`` turns each; per pair, the ratio of their
mean block times. Printed per placement, over ``--pairs`` pairs: the s.d. of the log ratio (what a
lockstep round's ratio carries from the placement alone; the code is the same on both sides, so 0
is the truth) and its range.

Placements: both processes on the last CPU, both on the first, one CPU each, and left to the
scheduler. Needs two CPUs or more.

    python benchmarks/turns_on_one_cpu.py [--pairs 20] [--blocks 16] [--steps 5]
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys

TAKER = r'''
import os, sys, time
if sys.argv[1] != "any":
    os.sched_setaffinity(0, {int(sys.argv[1])})
steps = int(sys.argv[2])

def spin():
    total = 0
    for i in range(20000):
        total = (total + i * i) % 1000003
    return total

for _ in range(20):
    spin()
took = []
for line in sys.stdin:
    if line.strip() == "end":
        break
    began = time.perf_counter()
    for _ in range(steps):
        spin()
    took.append(time.perf_counter() - began)
    print("done", flush=True)
print(sum(took) / len(took), flush=True)
'''


def pair_ratio(cpus: tuple[str, str], blocks: int, steps: int) -> float:
    """The first process's mean block time over the second's, the two taking turns."""
    takers = [subprocess.Popen([sys.executable, "-c", TAKER, cpu, str(steps)], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True) for cpu in cpus]
    for _ in range(blocks):
        for taker in takers:
            taker.stdin.write("go\n")
            taker.stdin.flush()
            taker.stdout.readline()
    means = []
    for taker in takers:
        taker.stdin.write("end\n")
        taker.stdin.flush()
        means.append(float(taker.stdout.readline()))
        taker.wait()
    return means[0] / means[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=20)
    parser.add_argument("--blocks", type=int, default=16)
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args()
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        raise SystemExit("needs two CPUs or more in this process's affinity")
    first, last = str(cpus[0]), str(cpus[-1])
    placements = {"both on the last CPU": (last, last), "both on the first CPU": (first, first),
                  "one CPU each": (first, last), "left to the scheduler": ("any", "any")}
    ratios: dict[str, list[float]] = {name: [] for name in placements}
    for _ in range(args.pairs):  # the placements in turn, so the host's drift hits them alike
        for name, pinned in placements.items():
            ratios[name].append(pair_ratio(pinned, args.blocks, args.steps))
    load = os.getloadavg()[0]
    print(f"{args.pairs} pairs of {args.blocks} turns of {args.steps} calls each; load average {load:.2f}")
    for name, found in ratios.items():
        spread = statistics.stdev(math.log(r) for r in found)
        print(f"{name:24} s.d. of log ratio {spread:.4f}  range {min(found):.3f}-{max(found):.3f}")


if __name__ == "__main__":
    main()
