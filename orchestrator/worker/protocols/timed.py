"""Protocol time: the command is timed whole, like hyperfine.

``params.warmup`` unrecorded runs of the command (default 0), then ``params.measure`` measured ones
(default 1), each a step row: ``wall_ms`` (spawn to reap), ``user_ms`` and ``sys_ms`` (CPU time of the
process and the children it waited for, ``os.wait4``) and ``cpu_ms``, their sum (the run's CPU time, as
``cpu_ms`` is every thread's CPU time of a step in every protocol), as the launch helper measured them
(``worker.proc``). The run's values are their means, and its ``max_rss_mib`` the mean peak RSS
(null unless every measured run had one); ``throughput`` is measured runs per second of wall time.
The first run that exits non-zero ends the bench run.
"""

from __future__ import annotations

import signal
import threading
from statistics import fmean

from orchestrator.capabilities import TIMED_PHASES
from orchestrator.contract import BenchUsage, StepRecord
from orchestrator.worker.proc import BenchProcess
from orchestrator.worker.protocols import BenchReader, OnStep, Start, StopSignal, int_param, too_many_steps

WATCH_INTERVAL_S = 0.05


class TimedReader(BenchReader):
    """Runs the command ``warmup + measure`` times, each reaped with ``os.wait4``."""

    protocol = "time"

    @property
    def warmup(self) -> int:
        return int_param(self.run.params, "warmup", 0)

    @property
    def measure(self) -> int:
        return int_param(self.run.params, "measure", 1)

    @property
    def total_steps(self) -> int | None:
        return self.measure

    def execute(self, start: Start, stop: StopSignal, on_step: OnStep) -> str | None:
        if (too_many := too_many_steps(self.run, self.measure)) is not None:
            return f"params.measure={self.measure}: {too_many}"
        samples: list[tuple[float, float, float, float, float | None]] = []  # wall, user, sys, cpu ms; MiB
        for index in range(self.warmup + self.measure):
            if stop.expired():  # first asked here, in the task's thread (the watcher asks later)
                return None
            proc = start()
            usage = wait_timed(proc, stop)
            proc.kill_group()  # what the run left behind; the process itself is reaped already
            if proc.returncode != 0 or usage is None:
                return None  # the verdict reads the exit code (or the timeout / cancellation)
            if index < self.warmup:
                continue
            user_ms, sys_ms = usage.user_s * 1000, usage.sys_s * 1000
            sample = (usage.wall_s * 1000, user_ms, sys_ms, user_ms + sys_ms, usage.max_rss_mib)
            samples.append(sample)
            step = StepRecord(step=len(samples) - 1, warmup=False,
                              phases=dict(zip(TIMED_PHASES, sample[:4], strict=True)))
            self.steps.append(step)
            on_step(step, len(self.steps))
        walls = [s[0] for s in samples]
        peaks = [s[4] for s in samples]
        self.summary = {
            "throughput": len(samples) / (sum(walls) / 1000),
            "measure_wall_s": sum(walls) / 1000,
            "phase_means_ms": {name: fmean(s[i] for s in samples) for i, name in enumerate(TIMED_PHASES)},
            "metrics": {"max_rss_mib": None if None in peaks else fmean(peaks)},  # type: ignore[arg-type]
        }
        return None

    def complete(self) -> str | None:
        return None if self.summary is not None else "no measured run completed"


def wait_timed(proc: BenchProcess, stop: StopSignal) -> BenchUsage | None:
    """Block until ``proc`` exits (reaped by its launch helper; a watcher kills its group when ``stop``
    expires); its resource usage (None if it never started or its helper died)."""
    done = threading.Event()

    def watch() -> None:
        while not done.wait(WATCH_INTERVAL_S):
            if stop.expired():
                proc.signal_group(signal.SIGKILL)
                return

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        proc.wait()
    finally:
        done.set()
        watcher.join()
    return proc.usage
