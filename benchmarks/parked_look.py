"""What a lockstep round's look at its sides' CPU time costs at each hand-over (``worker.parked``):
the walk down the kernel's children lists against a pass over all of /proc per side (kernels
without the lists; before the walk, one pass for both sides cost 2.3-2.5 ms here), on two real
process trees as a round has them (a launch helper and its bench; one bench with ``--threads`` threads), on
this host as it is (its process count printed: the pass grows with it, the walk does not). Needs a
kernel that lists children (``/proc/<pid>/task/<tid>/children``).

A suite round of 15 benchmarks in 16 blocks a side hands over 960 times; the time per look times
that is what each round pays. Timing: run it on an idle host and say the load.

    python benchmarks/parked_look.py [--looks 2000] [--threads 8]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

from orchestrator.worker import bench_spawn, parked

BENCH = """import threading, time
[threading.Thread(target=time.sleep, args=(600,)).start() for _ in range({})]
time.sleep(600)"""


def per_look_ms(helpers: list[int], looks: int, walk: bool) -> float:
    """Milliseconds per ``cpu_ticks`` of ``helpers``, walking the children lists or not."""
    bench_spawn.HAS_CHILDREN_FILES = walk
    started = time.perf_counter()
    for _ in range(looks):
        parked.cpu_ticks(helpers)
    return (time.perf_counter() - started) / looks * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--looks", type=int, default=2000)
    parser.add_argument("--threads", type=int, default=8)
    args = parser.parse_args()
    sides = [subprocess.Popen([sys.executable, "-c",
                               "import subprocess, sys; subprocess.run([sys.executable, '-c', sys.argv[1]])",
                               BENCH.format(threads)]) for threads in (0, args.threads)]
    try:
        time.sleep(1.0)  # both trees started
        helpers = [side.pid for side in sides]
        walk = per_look_ms(helpers, args.looks, walk=True)
        scan = per_look_ms(helpers, args.looks, walk=False)
        processes = sum(entry.isdigit() for entry in os.listdir("/proc"))
        print(f"{processes} processes on the host, load {os.getloadavg()[0]:.2f}; a look at 2 sides "
              f"(a bench of 1 thread, one of {args.threads + 1}): walk {walk:.3f} ms, without the lists "
              f"(a pass over /proc a side) {scan:.3f} ms, {scan / walk:.1f}x; over a round's 960 "
              f"hand-overs: {walk * 0.96:.2f} s against {scan * 0.96:.2f} s")
    finally:
        for side in sides:
            for child in bench_spawn.children(side.pid):
                os.kill(child, 9)
            side.kill()
            side.wait()


if __name__ == "__main__":
    main()
