"""Quiet windows (the sweep's ``quiet:`` keys): before a run or a lockstep round, the worker waits,
holding the host lock, until the host was quiet over the last second, or until ``max_wait_s``.

Quiet means: the CPUs busy over the last second (``/proc/stat``: the non-idle share of every CPU's
time, in CPUs, so 0.5 is half a CPU busy) at most ``max_load``, and the share stolen by the
hypervisor at most ``max_steal``. The wait and what the last second showed are recorded with every
run of the round (``quiet_wait_s``, ``quiet_load``, ``quiet_steal``, ``quiet_met``), so the report
and the board can show how long the host made the sweep wait and whether it ever went quiet.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from orchestrator.contract import QuietLimits, QuietWait
from orchestrator.worker.disturbance import CpuSample, cpu_sample

WINDOW_S = 1.0


def busy_and_steal(before: CpuSample, after: CpuSample, cpus: int) -> tuple[float, float] | None:
    """(busy CPUs, stolen share) between two samples; None when no tick passed."""
    total = after.total - before.total
    if total <= 0:
        return None
    idle = after.idle - before.idle
    return cpus * (total - idle) / total, (after.steal - before.steal) / total


def wait_for_quiet(limits: QuietLimits, *, stopped: Callable[[], bool] = lambda: False,
                   sample: Callable[[], CpuSample | None] = cpu_sample,
                   sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic,
                   cpus: int | None = None) -> QuietWait:
    """Wait (see the module docstring) and say how it ended; a host without ``/proc/stat`` counts as
    quiet at once, with unknown figures; ``stopped`` (a cancel) ends the wait early, not met."""
    cpus = cpus or os.cpu_count() or 1
    started = clock()
    before = sample()
    if before is None:
        return QuietWait(0.0, None, None, met=True)
    while True:
        sleep(WINDOW_S)
        after = sample()
        figures = busy_and_steal(before, after, cpus) if after else None
        waited = clock() - started
        if figures is not None:
            load, steal = figures
            if load <= limits.max_load and steal <= limits.max_steal:
                return QuietWait(waited, load, steal, met=True)
        if waited >= limits.max_wait_s or stopped() or after is None:
            load, steal = figures if figures else (None, None)
            return QuietWait(waited, load, steal, met=False)
        before = after
