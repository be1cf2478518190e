"""The suite channel's loop (docs/design.md, "Suites in lockstep"): what a suite's process does once
it is inside a case, whichever tool collected it.

``Session.open`` writes the header with every case collected and returns the cases the worker wants,
in its order. ``Session.serve`` is called inside each case: it says so (a ``case`` record) and obeys
the worker until ``next``: ``calibrate`` finds the calls per step, ``run`` runs a block of steps of
that many calls, each step's time per call written as a step record (``time_ms``, and where the target
timed the calls itself their CPU time per call: ``cpu_ms``, the process's, every thread's;
``thread_cpu_ms``, the calling thread's) and the block closed by a ``block`` record. ``case_end`` says
how a case ended; ``finish`` writes the summary.

A ``Target`` is one benchmark as its tool defined it: ``step(calls)`` makes ``calls`` calls and
returns their ``StepTimes`` (timed by the target with a ``Stopwatch``; a pyperf ``time_func`` times
itself, so its steps have no CPU time: only what it timed is the benchmark). Under callgrind the
measured steps are the only thing counted (``callgrind.Marks``), and each measured block is preceded
by as many steps of no calls, counted apart: the steps' own fixed part, which the worker subtracts.
"""

from __future__ import annotations

import inspect
import math
import time
from collections.abc import Callable
from typing import Any, NamedTuple, Protocol

from orchestrator.benchkit.callgrind import NoMarks, marks
from orchestrator.benchkit.channel import CONTROL_VERSION, PROTOCOL_VERSION
from orchestrator.suitekit.channel import MESSAGE_CHARS, SUITE_VERSION, Channel, ChannelError, finite_time

TIME_METRIC = "time_ms"
CPU_METRIC = "cpu_ms"  # the process's CPU time per call (every thread's user and system time)
THREAD_CPU_METRIC = "thread_cpu_ms"  # the calling thread's CPU time per call
MAX_CALIBRATION_TRIES = 40
MAX_GROWTH = 1000  # a calibration step grows the calls at most this much at once
CONFIRM_FACTOR = 2.0  # a first call this many times the aim is timed again (the worker may shorten
# the blocks of a case whose one call outlasts them: a descheduled call must not make it do so)


class StepTimes(NamedTuple):
    """What a step's calls took: ``seconds`` of wall time (as the target says: checked before use) and,
    where the target timed the calls itself, the process's and the calling thread's CPU seconds over
    the same spans (None where a tool times itself)."""

    seconds: object
    cpu_s: float | None = None
    thread_cpu_s: float | None = None


class Stopwatch:
    """Wall and CPU time of the spans timed with it (``with watch:`` around the calls), added up; the
    CPU clocks are read outside the wall clock's span, so the wall time is the calls' alone."""

    def __init__(self) -> None:
        self.wall_s = self.cpu_s = self.thread_cpu_s = 0.0
        self._started = (0.0, 0.0, 0.0)

    def __enter__(self) -> None:
        cpu, thread = time.process_time(), time.thread_time()
        self._started = (cpu, thread, time.perf_counter())

    def __exit__(self, *exc: object) -> None:
        wall = time.perf_counter()
        thread, cpu = time.thread_time(), time.process_time()
        self.cpu_s += cpu - self._started[0]
        self.thread_cpu_s += thread - self._started[1]
        self.wall_s += wall - self._started[2]

    def times(self) -> StepTimes:
        return StepTimes(self.wall_s, self.cpu_s, self.thread_cpu_s)


class Target(Protocol):
    """One benchmark: ``step(calls)`` makes ``calls`` calls and returns what they took."""

    inner_loops: int  # what one call counts for (pyperf's inner_loops); the time per call divides by it
    fixed_calls: int | None  # calls per step the benchmark fixes itself (pedantic's iterations)

    def step(self, calls: int) -> StepTimes: ...


class StepError(Exception):
    """A step whose time is not a finite number >= 0."""


class FunctionTarget:
    """``fn(*args, **kwargs)``, called ``calls`` times in a loop timed as a whole."""

    def __init__(self, fn: Callable[..., Any], args: tuple = (), kwargs: dict | None = None, *,
                 inner_loops: int = 1, fixed_calls: int | None = None) -> None:
        self.fn, self.args, self.kwargs = fn, args, kwargs or {}
        self.inner_loops, self.fixed_calls = inner_loops, fixed_calls
        self.result: Any = None
        self.called = False

    def step(self, calls: int) -> StepTimes:
        fn, args, kwargs, watch = self.fn, self.args, self.kwargs, Stopwatch()
        result = None
        with watch:
            for _ in range(calls):
                result = fn(*args, **kwargs)
        self.result, self.called = result, True
        return watch.times()


def target_identity(target: Target) -> dict[str, str]:
    """Where the benchmarked function is defined (``target``: ``module:qualname``, ``target_file``), for
    tools that change it on purpose (``benchmarks/known_truth.py``); {} where it cannot be told."""
    function = getattr(target, "fn", None)
    module, qualname = getattr(function, "__module__", None), getattr(function, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(qualname, str):
        return {}
    try:
        source = inspect.getsourcefile(function)  # type: ignore[arg-type]
    except TypeError:  # a builtin
        source = None
    return {"target": f"{module}:{qualname}", **({"target_file": source} if source else {})}


class Calibration(NamedTuple):
    """The calls per step a calibration found, and how long its last step of that many calls took
    (None where it timed none: the target fixes its calls, or the tries ran out first)."""

    calls: int
    step_ms: float | None


def calibrate(target: Target, target_ms: float) -> Calibration:
    """The calls per step that take about ``target_ms`` (at least one), after one untimed call; the
    target's own ``fixed_calls`` where it fixes them. A single call that takes over
    ``CONFIRM_FACTOR`` times the aim is timed twice and the shorter kept."""
    if target.fixed_calls is not None:
        return Calibration(target.fixed_calls, None)
    target.step(1)
    calls = 1
    for _ in range(MAX_CALIBRATION_TRIES):
        ms = checked(target.step(calls).seconds, calls) * 1000.0
        if calls == 1 and ms > CONFIRM_FACTOR * target_ms:  # one call far past the aim, or a pause of
            ms = min(ms, checked(target.step(1).seconds, 1) * 1000.0)  # the host's: the shorter of two
        if ms >= 0.9 * target_ms:
            return Calibration(calls, ms)
        growth = min(MAX_GROWTH, target_ms / ms if ms > 0 else MAX_GROWTH)
        calls = max(calls + 1, math.ceil(calls * growth * 1.05))
    return Calibration(calls, None)


def checked(seconds: object, calls: int) -> float:
    """``seconds`` of a step of ``calls`` calls, or StepError."""
    if not finite_time(seconds):
        raise StepError(f"a step of {calls} calls took {seconds!r} s: not a finite time >= 0")
    return float(seconds)  # type: ignore[arg-type]


def per_call_ms(times: StepTimes, seconds: float, calls: int) -> dict[str, float]:
    """A step's phases: its time per call, and its CPU times per call where the target has them."""
    phases = {TIME_METRIC: seconds * 1000.0 / calls}
    if times.cpu_s is not None and times.thread_cpu_s is not None:
        phases[CPU_METRIC] = times.cpu_s * 1000.0 / calls
        phases[THREAD_CPU_METRIC] = times.thread_cpu_s * 1000.0 / calls
    return phases


class Session:
    """One suite process's side of the channel."""

    def __init__(self, channel: Channel, audit: dict[str, Any]) -> None:
        self.channel, self.audit = channel, audit
        self.marks = marks()
        self.next_step = 0
        self.ended = False  # told to end (or the worker went away): run no further case
        self.served = 0

    def open(self, names: list[str], separate: dict[str, str] | None = None) -> list[str]:
        """Write the header with every case ``names`` (``separate``: those that run only as separate
        processes, and why); the cases the worker wants, in its order ([] when told to end)."""
        self.channel.write(kind="header", protocol=PROTOCOL_VERSION, control=CONTROL_VERSION,
                           suite=SUITE_VERSION, cases=names, separate=separate or {}, audit=self.audit)
        command = self.channel.command()
        if command["cmd"] == "end":
            self.ended = True
            return []
        wanted = command.get("cases")
        if command["cmd"] != "cases" or not isinstance(wanted, list):
            raise ChannelError(f"expected the cases to run, got {str(command)[:200]}")
        unknown = [name for name in wanted if name not in set(names)]
        if unknown:
            raise ChannelError(f"told to run cases this process did not collect: {unknown[:5]}")
        return wanted

    def serve(self, case: str, target: Target) -> None:
        """Inside ``case``: obey the worker until ``next`` (or ``end``)."""
        self.channel.write(kind="case", case=case, **target_identity(target))
        self.served += 1
        while True:
            command = self.channel.command()
            kind = command["cmd"]
            if kind == "next":
                return
            if kind == "end":
                self.ended = True
                return
            if command.get("case") != case:
                raise ChannelError(f"a {kind} command for case {command.get('case')!r} inside {case!r}")
            if kind == "calibrate":
                found = calibrate(target, float(command["target_ms"]))
                timed = {} if found.step_ms is None else {"step_ms": found.step_ms}
                self.channel.write(kind="calibrated", case=case, calls=found.calls, **timed)
            elif kind == "run":
                self.block(case, target, int(command["block"]), int(command["steps"]),
                           bool(command.get("warmup")), int(command["calls"]))
            else:
                raise ChannelError(f"unknown command {str(command)[:200]}")

    def block(self, case: str, target: Target, block: int, steps: int, warmup: bool, calls: int) -> None:
        """``steps`` steps of ``calls`` calls; under callgrind the measured ones counted, and dumped as
        one block."""
        counted = not warmup and not isinstance(self.marks, NoMarks)
        if counted:
            self._count_fixed(target, block, steps)
        started, total = time.time(), 0.0
        for _ in range(steps):
            if counted:
                self.marks.start()
            times = target.step(calls)
            if counted:
                self.marks.stop()
            seconds = checked(times.seconds, calls)
            total += seconds
            self.channel.write(kind="step", step=self.next_step, warmup=warmup, block=block, case=case,
                               phases=per_call_ms(times, seconds, calls * target.inner_loops))
            self.next_step += 1
        if counted:
            self.marks.dump(f"shasweep block {block}")
        self.channel.write(kind="block", block=block, steps=steps, wall_s=total, warmup=warmup,
                           started=started, ended=time.time(), case=case, calls=calls,
                           inner_loops=target.inner_loops)

    def _count_fixed(self, target: Target, block: int, steps: int) -> None:
        """Under callgrind, before a measured block: ``steps`` steps of no calls, counted and dumped as
        the block's fixed part (the marks' own requests, the step's timer reads), which the worker takes
        off the block's count, so that a count per call does not move with the calls per step. A
        target that cannot make no calls (a pyperf ``time_func`` that divides by its loops) leaves the
        block without one: what it counted is dropped."""
        try:
            for _ in range(steps):
                self.marks.start()
                try:
                    target.step(0)
                finally:
                    self.marks.stop()
        except Exception:
            self.marks.zero()
            return
        self.marks.dump(f"shasweep block {block} fixed")

    def case_end(self, case: str, outcome: str, message: str | None = None, **extra: Any) -> None:
        """How ``case`` ended: passed, skipped, absent (its benchmark was never called), failed or
        unsupported."""
        text = message[-MESSAGE_CHARS:] if message else None
        self.channel.write(kind="case_end", case=case, outcome=outcome, message=text, **extra)

    def finish(self) -> None:
        self.channel.write(kind="summary", cases=self.served)
        self.channel.close()
