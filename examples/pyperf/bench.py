"""suitelib's benchmarks as a pyperf suite: ``python bench.py -o out.json`` (pyperf's own options).

Each value is the CPU time of the loop (``time.thread_time``), not its wall time, so a machine
shared with other work blurs it less; pyperf divides it by the loops as usual.
"""

import time

import pyperf
import suitelib


def cpu_timed(function):
    def timed(loops):
        start = time.thread_time()
        for _ in range(loops):
            function()
        return time.thread_time() - start
    return timed


runner = pyperf.Runner()
for name in suitelib.BENCHMARKS:
    runner.bench_time_func(name, cpu_timed(getattr(suitelib, name)))
