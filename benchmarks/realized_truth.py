"""The slowdown a known-truth commit really made (``benchmarks/known_truth.py``), measured outside
shasweep: the base's and the slowed commit's function imported side by side into one process and
timed in turns, blocks of calls each way, so the process's own speed (on a VM one of two for its life)
moves both alike and cancels in their ratio. For a function called without arguments.

    python benchmarks/realized_truth.py BASE_TREE SLOW_TREE MODULE:FUNCTION [--processes 6] [--blocks 200]

Prints, per process, the median ratio slow/base of its block pairs and the base's time per call.
"""

from __future__ import annotations

import argparse
import subprocess
import sys

ONE_PROCESS = '''
import importlib.util, statistics, sys, time
from pathlib import Path

def load(tree, alias, module):
    parts = module.split(".")
    path = Path(tree, *parts)
    path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
    spec = importlib.util.spec_from_file_location(alias, path)
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    return loaded

base_tree, slow_tree, target, blocks, calls = sys.argv[1:4] + [int(sys.argv[4]), int(sys.argv[5])]
module, name = target.split(":")
base = getattr(load(base_tree, "realized_base", module), name)
slow = getattr(load(slow_tree, "realized_slow", module), name)

def block(function):
    began = time.perf_counter()
    for _ in range(calls):
        function()
    return time.perf_counter() - began

for function in (base, slow):
    block(function)
ratios, base_times = [], []
for number in range(blocks):
    first, second = (base, slow) if number % 2 == 0 else (slow, base)
    times = {first: block(first), second: block(second)}
    ratios.append(times[slow] / times[base])
    base_times.append(times[base])
print(f"{statistics.median(ratios):.4f} {statistics.median(base_times) / calls * 1e3:.3f}")
'''


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("base_tree")
    parser.add_argument("slow_tree")
    parser.add_argument("target", help="MODULE:FUNCTION, the module a path inside the trees")
    parser.add_argument("--processes", type=int, default=6)
    parser.add_argument("--blocks", type=int, default=200)
    parser.add_argument("--calls", type=int, default=8, help="calls of the function per block")
    args = parser.parse_args()
    print("slow/base (median of block pairs)  base ms per call")
    for _ in range(args.processes):
        done = subprocess.run([sys.executable, "-c", ONE_PROCESS, args.base_tree, args.slow_tree, args.target,
                               str(args.blocks), str(args.calls)], capture_output=True, text=True)
        if done.returncode != 0:
            print(f"{args.target}: {done.stderr.strip().splitlines()[-1]}", file=sys.stderr)
            raise SystemExit(2)
        print(done.stdout.strip())


if __name__ == "__main__":
    main()
