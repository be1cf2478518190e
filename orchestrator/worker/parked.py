"""What a parked process of a lockstep round may do: nothing (docs/design.md, "Run protocol", control
channel). A parked process blocks reading its control FIFO, so it uses no CPU and writes nothing;
one that works while another side measures (a CPU hog started only while parked, a thread that never
sleeps, a flood of its stream) steals the host unseen, so the round watches for both.

**CPU.** ``cpu_ticks`` sums, per side, the CPU time of the whole tree under the side's launch helper
(the bench, its children, the daemons it left, which the helper reaps as their subreaper, and the
children the helper reaped; not the helper's own time). It walks each tree as the helper does
(``bench_spawn.tree``: down the kernel's ``/proc/<pid>/task/<tid>/children`` lists, where the kernel
has them) and reads only its processes' ``stat``: a pass over all of ``/proc`` cost 2.3-3.4 ms a
hand-over with 69-74 processes on the VM (more on a busy CI runner), 960 times a suite round. The
round looks at every side at each hand-over (``ParkedTime.look``), which is when no bench is
measuring, so a look costs nothing a measurement sees, only the round's time. The kernel counts in
clock ticks (``SC_CLK_TCK``: 10 ms here), and a thread pool spins for a few milliseconds after its
last task (libgomp's default: 5-10 ms per parking for two threads, measured here), so a side may
use, over the round, at most ``PARKED_CPU_SHARE`` (1 %) of its parked wall time plus
``TICKS_PER_PARKING`` clock ticks per interval it was parked; more fails the round naming the side.
A hog that takes a CPU throughout parkings longer than a few ticks is far above that.

**Writes.** A parked process's stream must not grow: more than ``PARKED_WRITE_BYTES`` written to it
while parked fails the round at the next look (every poll of the round), before a backlog the worker
would have to read builds up.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from orchestrator.worker.bench_spawn import tree

PARKED_CPU_SHARE = 0.01
TICKS_PER_PARKING = 1
PARKED_WRITE_BYTES = 64 * 1024
CLOCK_TICK_S = 1 / os.sysconf("SC_CLK_TCK")


def cpu_ticks(helpers: list[int]) -> dict[int, int]:
    """For each launch helper pid, the CPU ticks (user + system) of everything under it: its live
    descendants' own and reaped children's, and the children it reaped itself."""
    totals = {}
    for helper in helpers:
        total = _stat_ticks(helper)[1]
        for pid in tree(helper):
            own, reaped = _stat_ticks(pid)
            total += own + reaped
        totals[helper] = total
    return totals


def _stat_ticks(pid: int) -> tuple[int, int]:
    """(own CPU ticks, reaped children's CPU ticks) of ``pid``; (0, 0) once it is gone (its time is
    then its parent's reaped time, once reaped)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()  # after the command name, which may hold ")"
        return int(fields[11]) + int(fields[12]), int(fields[13]) + int(fields[14])
    except (OSError, IndexError, ValueError):
        return 0, 0


@dataclass
class ParkedTime:
    """One side's time parked in a round: wall seconds, CPU seconds of its tree, the intervals."""

    wall_s: float = 0.0
    cpu_s: float = 0.0
    intervals: int = 0
    _last: tuple[float, int] | None = None  # (monotonic seconds, CPU ticks) at the previous look

    def look(self, now: float, ticks: int, parked: bool) -> None:
        """Take a look at time ``now``; ``parked``: whether the side was parked since the last look."""
        if parked and self._last is not None:
            self.wall_s += now - self._last[0]
            self.cpu_s += max(0, ticks - self._last[1]) * CLOCK_TICK_S
            self.intervals += 1
        self._last = (now, ticks)

    def excess(self) -> str | None:
        """Why the side used more CPU while parked than it may, or None."""
        allowed = PARKED_CPU_SHARE * self.wall_s + TICKS_PER_PARKING * self.intervals * CLOCK_TICK_S
        if self.cpu_s <= allowed:
            return None
        return (f"used {self.cpu_s:.2f} s of CPU while parked for {self.wall_s:.2f} s "
                f"({100 * self.cpu_s / max(self.wall_s, 1e-9):.0f} % of a CPU; a parked process may use at "
                f"most {100 * PARKED_CPU_SHARE:g} % plus a clock tick a parking): something of it ran while "
                "another side measured (a thread pool that spins: OMP_WAIT_POLICY=passive)")


def parked_writes(written: int) -> str | None:
    """Why ``written`` bytes appended to a parked process's stream are too many, or None."""
    if written <= PARKED_WRITE_BYTES:
        return None
    return (f"wrote {written} bytes to its stream while parked (a parked process writes nothing; at "
            f"most {PARKED_WRITE_BYTES} are let pass)")
