"""Run an unchanged pyperf script in a lockstep round (docs/design.md, "Suites in lockstep"):

    python -m orchestrator.suitekit.pyperf_shim --control FIFO --stream FILE bench.py [its args]
    python -m orchestrator.suitekit.pyperf_shim --control FIFO --stream FILE -m package.bench [its args]

The script runs as ``__main__`` with its own arguments, ``pyperf.Runner`` replaced by a subclass that
collects each benchmark instead of running it: ``bench_func``, ``bench_time_func``,
``bench_async_func`` and ``timeit`` (which pyperf builds on ``bench_time_func``) return None, and
``bench_command`` is listed as a case that runs only as separate processes. pyperf's options parse
as usual and are ignored; its worker processes are never spawned. Once the script has returned, the
shim tells the worker what it collected and serves each benchmark the worker asks for, in the
process, through the control channel (``serve.Session``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import runpy
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyperf

from orchestrator.benchkit.bench import git_sha
from orchestrator.suitekit.channel import Channel
from orchestrator.suitekit.serve import FunctionTarget, Session, StepTimes, Stopwatch, Target

TOOL = "pyperf"
SEPARATE = "pyperf's bench_command"  # why such a case runs as separate processes


@dataclass
class Collected:
    """One benchmark the script defined: its name and how to make its target."""

    name: str
    target: Callable[[], Target] | None  # None: a bench_command, run only as separate processes


class TimeFuncTarget:
    """pyperf's ``bench_time_func``: ``time_func(loops, *args)`` times its loops itself."""

    fixed_calls = None

    def __init__(self, time_func: Callable[..., float], args: tuple, inner_loops: int) -> None:
        self.time_func, self.args, self.inner_loops = time_func, args, inner_loops

    def step(self, calls: int) -> StepTimes:
        return StepTimes(self.time_func(calls, *self.args))  # what it timed is its own: no CPU time


class AsyncTarget:
    """pyperf's ``bench_async_func``: ``await func(*args)`` ``calls`` times, timed inside the event loop
    (one loop per case, from ``loop_factory`` where the script gives one)."""

    fixed_calls = None

    def __init__(self, func: Callable[..., Any], args: tuple, inner_loops: int,
                 loop_factory: Callable[[], asyncio.AbstractEventLoop] | None) -> None:
        self.func, self.args, self.inner_loops = func, args, inner_loops
        self.loop = (loop_factory or asyncio.new_event_loop)()

    def step(self, calls: int) -> StepTimes:
        func, args, watch = self.func, self.args, Stopwatch()

        async def timed() -> None:
            with watch:
                for _ in range(calls):
                    await func(*args)

        asyncio.set_event_loop(self.loop)
        self.loop.run_until_complete(timed())
        return watch.times()

    def close(self) -> None:
        asyncio.set_event_loop(None)
        self.loop.close()


def collecting_runner(found: list[Collected]) -> type[pyperf.Runner]:
    """A ``pyperf.Runner`` whose benchmarks are added to ``found`` instead of run."""

    class CollectingRunner(pyperf.Runner):
        def _collect(self, name: str, target: Callable[[], Target] | None) -> None:
            if any(bench.name == name for bench in found):
                raise ValueError(f"duplicated benchmark name: {name!r}")
            found.append(Collected(name, target))

        def bench_func(self, name, func, *args, inner_loops=None, metadata=None):
            self._collect(name, lambda: FunctionTarget(func, args, inner_loops=inner_loops or 1))

        def bench_time_func(self, name, time_func, *args, inner_loops=None, metadata=None):
            self._collect(name, lambda: TimeFuncTarget(time_func, args, inner_loops or 1))

        def bench_async_func(self, name, func, *args, inner_loops=None, metadata=None, loop_factory=None):
            self._collect(name, lambda: AsyncTarget(func, args, inner_loops or 1, loop_factory))

        def bench_command(self, name, command):
            self._collect(name, None)

    return CollectingRunner


def run_script(target: list[str], runner: type[pyperf.Runner]) -> None:
    """Run ``target`` (``[script, *args]`` or ``["-m", module, *args]``) as ``__main__`` with
    ``pyperf.Runner`` replaced by ``runner``."""
    pyperf.Runner = runner  # type: ignore[misc]  # what the script's ``pyperf.Runner()`` makes
    try:
        if target[0] == "-m":
            sys.argv = [target[1], *target[2:]]
            sys.path.insert(0, os.getcwd())
            runpy.run_module(target[1], run_name="__main__", alter_sys=True)
        else:
            sys.argv = list(target)
            sys.path.insert(0, os.path.dirname(os.path.abspath(target[0])))
            runpy.run_path(target[0], run_name="__main__")
    except SystemExit as exc:
        if exc.code not in (None, 0):
            raise


def serve_all(session: Session, collected: list[Collected]) -> None:
    """Tell the worker what the script collected; serve each benchmark it asks for."""
    separate = {bench.name: SEPARATE for bench in collected if bench.target is None}
    by_name = {bench.name: bench for bench in collected}
    for name in session.open([bench.name for bench in collected], separate):
        make = by_name[name].target
        assert make is not None  # the worker never asks for a separate case
        target: Target | None = None
        try:
            target = make()
            session.serve(name, target)
            session.case_end(name, "passed")
        except Exception as exc:  # noqa: BLE001 - the benchmark's failure is its case's, named
            session.case_end(name, "failed", "".join(traceback.format_exception(exc)))
        finally:
            if target is not None and hasattr(target, "close"):
                target.close()
        if session.ended:
            break
    session.finish()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m orchestrator.suitekit.pyperf_shim")
    parser.add_argument("--control", required=True)
    parser.add_argument("--stream", required=True)
    parser.add_argument("target", nargs=argparse.REMAINDER, help="the script and its arguments, or -m module")
    parsed = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if not parsed.target or (parsed.target[0] == "-m" and len(parsed.target) < 2):
        parser.error("give the pyperf script (or -m module) and its arguments")
    channel = Channel(parsed.control, parsed.stream)
    audit = {"tool": TOOL, "versions": {"pyperf": pyperf.__version__, "python": sys.version.split()[0]},
             "module_file": os.getcwd(), "git_sha": git_sha(os.getcwd())}
    found: list[Collected] = []
    try:
        run_script(parsed.target, collecting_runner(found))
    except BaseException as exc:  # noqa: BLE001 - the script itself failed: the run's error record
        channel.write(kind="error", type=type(exc).__name__, message=f"the pyperf script failed: {exc}",
                      traceback="".join(traceback.format_exception(exc))[-2000:])
        return 1
    serve_all(Session(channel, audit), found)
    return 0


if __name__ == "__main__":
    sys.exit(main())
