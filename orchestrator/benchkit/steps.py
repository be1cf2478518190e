"""Steps and their phases as the bench helper times them. The whole step's wall time is always
``step_ms``, and its CPU time always ``cpu_ms`` (the process's: every thread's user and system time,
``time.process_time``) and ``thread_cpu_ms`` (the thread that ran the step, ``time.thread_time``); a
phase is reported explicitly, by timing part of the step (``Recorder.phase``, the helper's
``bench.phase``) or by returning ``Phases`` from it. Any other return value is ignored: a step's
result is the code under test's, never a report. ``Recorder`` runs blocks of steps, writes their
records and sums the measured window for the summary. The standard library only.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager

from orchestrator.benchkit.callgrind import NoMarks, marks
from orchestrator.benchkit.channel import RecordWriter, RunCommand

STEP_PHASE = "step_ms"  # the whole step, always reported
CPU_PHASE = "cpu_ms"  # the process's CPU time during the step (every thread), always reported
THREAD_CPU_PHASE = "thread_cpu_ms"  # the CPU time of the thread that ran the step, always reported
_OWN_PHASES = (STEP_PHASE, CPU_PHASE, THREAD_CPU_PHASE)  # what the helper times itself
_PHASE_NAME = re.compile(r"[A-Za-z_][\w.]{0,100}_ms")


def phase_name(name: object) -> str:
    """``name`` if it may name a phase: letters, digits, ``_`` and ``.``, ending in ``_ms`` (a step's
    timings are milliseconds), not one the helper times itself (``step_ms``, ``cpu_ms``,
    ``thread_cpu_ms``); else ValueError."""
    if not isinstance(name, str) or not _PHASE_NAME.fullmatch(name):
        raise ValueError(f"phase name {name!r}: letters, digits, '_' and '.', ending in '_ms'")
    if name in _OWN_PHASES:
        raise ValueError(f"phase name {name!r} is the whole step's wall or CPU time, timed by the helper")
    return name


class Phases(Mapping[str, float]):
    """Phase timings a step reports by returning them, in milliseconds: ``return Phases(parse_ms=1.5)``
    or ``Phases({"update.physics_ms": 2.0})``. Names as ``phase_name`` allows; values finite and >= 0
    (ValueError otherwise)."""

    def __init__(self, timings: Mapping[str, float] | None = None, /, **more: float) -> None:
        self._ms: dict[str, float] = {}
        for name, value in {**(timings or {}), **more}.items():
            ms = float(value) if isinstance(value, int | float) and not isinstance(value, bool) else math.nan
            if not (math.isfinite(ms) and ms >= 0):
                raise ValueError(f"phase {name!r}: {value!r} is not a finite number of ms >= 0")
            self._ms[phase_name(name)] = ms

    def __getitem__(self, name: str) -> float:
        return self._ms[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._ms)

    def __len__(self) -> int:
        return len(self._ms)

    def __repr__(self) -> str:
        return f"Phases({self._ms!r})"


class Recorder:
    """One run's steps: each timed (``step_ms``) with the phases reported in it, written as a step
    record; the measured steps' count, wall time and phase sums kept for the summary."""

    def __init__(self, writer: RecordWriter, items_per_step: float) -> None:
        self.writer, self.items_per_step = writer, items_per_step
        self.marks = marks()  # under callgrind (instrument: valgrind): only the measured steps count
        self.next_step, self.measured, self.wall_s = 0, 0, 0.0
        self.phase_sums: dict[str, float] = {}
        self._open: dict[str, float] | None = None  # the running step's phases

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Time the enclosed code as phase ``name`` of the running step (entered again in the same
        step, the times add up); RuntimeError outside a step."""
        phase_name(name)
        if self._open is None:
            raise RuntimeError(f"phase {name!r} timed outside a step: time phases inside the step function")
        opened, t0 = self._open, time.perf_counter()
        try:
            yield
        finally:
            opened[name] = opened.get(name, 0.0) + (time.perf_counter() - t0) * 1000.0

    def block(self, step: Callable[[], object], steps: int, *, warmup: bool,
              command: RunCommand | None = None) -> None:
        """``steps`` steps; a commanded block's steps carry its number and end with its block record."""
        number = None if command is None else command.block
        counted = not warmup and not isinstance(self.marks, NoMarks)
        started, t0 = time.time(), time.perf_counter()
        for _ in range(steps):
            if counted:
                self.marks.start()
            phases = self._one(step)
            if counted:
                self.marks.stop()
            self.writer.step(self.next_step, phases, warmup=warmup, block=number)
            self.next_step += 1
            if not warmup:
                for name, ms in phases.items():
                    self.phase_sums[name] = self.phase_sums.get(name, 0.0) + ms
        wall_s = time.perf_counter() - t0
        if counted:
            self.marks.dump(f"shasweep block {number or 0}")
        if not warmup:
            self.measured += steps
            self.wall_s += wall_s
        if command is not None:
            self.writer.block(command, wall_s, started, time.time())

    def _one(self, step: Callable[[], object]) -> dict[str, float]:
        """Run ``step`` once: the phases it reported, then ``step_ms``, ``cpu_ms`` and ``thread_cpu_ms``
        (the CPU clocks read outside the wall clock's span, so ``step_ms`` times the step alone)."""
        self._open = phases = {}
        c0, t0 = time.process_time(), time.thread_time()
        s0 = time.perf_counter()
        try:
            returned = step()
        finally:
            elapsed_ms = (time.perf_counter() - s0) * 1000.0
            thread_ms, cpu_ms = (time.thread_time() - t0) * 1000.0, (time.process_time() - c0) * 1000.0
            self._open = None
        if isinstance(returned, Phases):
            for name, ms in returned.items():
                phases[name] = phases.get(name, 0.0) + ms
        phases[STEP_PHASE], phases[CPU_PHASE], phases[THREAD_CPU_PHASE] = elapsed_ms, cpu_ms, thread_ms
        return phases

    def summary(self) -> None:
        """The summary record over the measured steps; ValueError when there were none."""
        if not self.measured or self.wall_s <= 0:
            raise ValueError("no measured steps: nothing to summarise")
        self.writer.summary(self.items_per_step * self.measured / self.wall_s, self.wall_s,
                            {name: total / self.measured for name, total in self.phase_sums.items()})
