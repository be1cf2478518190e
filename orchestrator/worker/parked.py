"""What a parked process of a lockstep round may do: nothing (docs/design.md, "Run protocol", control
channel). A parked process blocks reading its control FIFO, so it uses no CPU and writes nothing;
one that works while another side measures (a CPU hog started only while parked, a thread that never
sleeps, a flood of its stream) steals the host unseen, so the round watches for both.

**CPU.** ``cpu_ticks`` reads ``/proc/<pid>/stat`` of every process in one pass and sums, per side,
the whole tree under the side's launch helper (the bench, its children, the daemons it left, and the
children the helper reaped; not the helper's own time). The round looks at every side at each hand-
over (``ParkedTime.look``), which is when no bench is measuring, so a look costs nothing a
measurement sees. The kernel counts in clock ticks (``SC_CLK_TCK``: 10 ms here), and a thread pool
spins for a few milliseconds after its last task (libgomp's default: 5-10 ms per parking for two
threads, measured here), so a side may use, over the round, at most ``PARKED_CPU_SHARE`` (1 %) of
its parked wall time plus ``TICKS_PER_PARKING`` clock ticks per interval it was parked; more fails
the round naming the side. A hog that takes a CPU throughout parkings longer than a few ticks is far
above that.

**Writes.** A parked process's stream must not grow: more than ``PARKED_WRITE_BYTES`` written to it
while parked fails the round at the next look (every poll of the round), before a backlog the worker
would have to read builds up.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

PARKED_CPU_SHARE = 0.01
TICKS_PER_PARKING = 1
PARKED_WRITE_BYTES = 64 * 1024
CLOCK_TICK_S = 1 / os.sysconf("SC_CLK_TCK")


def cpu_ticks(helpers: list[int]) -> dict[int, int]:
    """For each launch helper pid, the CPU ticks (user + system) of everything under it: its live
    descendants' own and reaped children's, and the children it reaped itself. One pass over /proc."""
    parent_of: dict[int, int] = {}
    own: dict[int, int] = {}
    reaped: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()  # after the command name, which may hold ")"
            pid = int(entry)
            parent_of[pid] = int(fields[1])
            own[pid], reaped[pid] = int(fields[11]) + int(fields[12]), int(fields[13]) + int(fields[14])
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile
    children: dict[int, list[int]] = {}
    for pid, parent in parent_of.items():
        children.setdefault(parent, []).append(pid)
    totals = {}
    for helper in helpers:
        total, under = reaped.get(helper, 0), list(children.get(helper, []))
        for pid in under:  # grows while it is walked: breadth first
            total += own[pid] + reaped[pid]
            under += children.get(pid, [])
        totals[helper] = total
    return totals


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
