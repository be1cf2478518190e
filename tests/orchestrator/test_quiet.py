"""Quiet windows (``worker.quiet``): the wait ends when the last second was quiet, or after
``max_wait_s``; the figures of the last second are what it reports."""

from __future__ import annotations

import subprocess
import sys

from orchestrator.contract import QuietLimits
from orchestrator.worker.disturbance import CpuSample
from orchestrator.worker.quiet import wait_for_quiet


class ScriptedHost:
    """``/proc/stat`` samples that advance by the given (busy, steal) CPU shares each second."""

    def __init__(self, seconds: list[tuple[float, float]], cpus: int = 2) -> None:
        self.seconds, self.cpus = list(seconds), cpus
        self.now, self.total, self.idle, self.steal = 0.0, 0, 0, 0

    def sample(self) -> CpuSample:
        return CpuSample(steal=self.steal, total=self.total, load=None, idle=self.idle)

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        busy, steal = self.seconds.pop(0) if self.seconds else (0.0, 0.0)
        ticks = 100 * self.cpus
        self.total += ticks
        self.idle += round(ticks * (1 - busy / self.cpus))
        self.steal += round(ticks * steal)

    def clock(self) -> float:
        return self.now


def wait(host: ScriptedHost, limits: QuietLimits):
    return wait_for_quiet(limits, sample=host.sample, sleep=host.sleep, clock=host.clock, cpus=host.cpus)


def test_it_waits_until_a_whole_second_was_under_both_limits():
    host = ScriptedHost([(1.5, 0.0), (0.1, 0.2), (0.1, 0.01)])
    result = wait(host, QuietLimits(max_load=0.2, max_steal=0.02, max_wait_s=60))
    assert result.met and result.waited_s == 3.0
    assert abs(result.load - 0.1) < 1e-9 and abs(result.steal - 0.01) < 1e-9


def test_a_host_that_never_quietens_is_waited_for_at_most_max_wait_s():
    host = ScriptedHost([(1.0, 0.0)] * 100)
    result = wait(host, QuietLimits(max_load=0.2, max_steal=0.02, max_wait_s=5))
    assert not result.met and result.waited_s == 5.0 and result.load == 1.0
    assert result.columns() == {"quiet_wait_s": 5.0, "quiet_load": 1.0, "quiet_steal": 0.0,
                                "quiet_met": False}


def test_a_cancel_ends_the_wait():
    host = ScriptedHost([(1.0, 0.0)] * 100)
    result = wait_for_quiet(QuietLimits(0.2, 0.02, 60), sample=host.sample, sleep=host.sleep,
                            clock=host.clock, cpus=2, stopped=lambda: True)
    assert not result.met and result.waited_s == 1.0


def test_on_this_host_a_spinning_process_keeps_it_from_being_quiet():
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        result = wait_for_quiet(QuietLimits(max_load=0.5, max_steal=1.0, max_wait_s=2.0))
    finally:
        spinner.kill()
        spinner.wait()
    assert not result.met and result.load >= 0.5 and result.waited_s >= 2.0
    everything = wait_for_quiet(QuietLimits(max_load=1000.0, max_steal=1.0, max_wait_s=30.0))
    assert everything.met and everything.load is not None
