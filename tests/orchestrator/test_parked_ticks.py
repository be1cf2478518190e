"""``worker.parked.cpu_ticks`` walks a side's process tree down the kernel's children lists and counts
what it counts from the parent links of one pass over all of /proc (kernels without the lists): a
child a thread started, an orphan its subreaper took in, both of which spun; real processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from orchestrator.worker import bench_spawn, parked

# A subreaper (as the launch helper is) whose thread starts a child that spins 0.3 s and then idles,
# and whose child leaves an orphan that spins 0.3 s and then idles: the subreaper takes it in.
TREE = r"""
import ctypes, os, subprocess, sys, threading, time
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)
spin = "import time\nend = time.process_time() + 0.3\nwhile time.process_time() < end: pass\ntime.sleep(60)"
threading.Thread(target=lambda: subprocess.Popen([sys.executable, "-c", spin])).start()
leaver = "import subprocess, sys\nsubprocess.Popen([sys.executable, '-c', %r])" % spin
subprocess.run([sys.executable, "-c", leaver])
print("ready", flush=True)
time.sleep(60)
"""


def settled_ticks(pid: int, at_least: float) -> int:
    """The tree's CPU ticks once both spinners have spun (at least ``at_least``) and idle: unchanged
    over half a second. However loaded the host, no fixed sleep is assumed long enough."""
    deadline, last = time.monotonic() + 120, -1
    while time.monotonic() < deadline:
        ticks = parked.cpu_ticks([pid])[pid]
        if ticks >= at_least and ticks == last:
            return ticks
        last = ticks
        time.sleep(0.5)
    raise AssertionError(f"the spinners did not spin and settle within 120 s (last {last} ticks)")


@pytest.mark.skipif(not bench_spawn.HAS_CHILDREN_FILES, reason="the kernel lists no children")
def test_the_tree_walk_counts_what_a_pass_over_proc_counts(monkeypatch):
    helper = subprocess.Popen([sys.executable, "-c", TREE], stdout=subprocess.PIPE, text=True)
    try:
        assert helper.stdout.readline().strip() == "ready"
        walked = settled_ticks(helper.pid, 2 * 0.3 / parked.CLOCK_TICK_S * 0.9)
        assert len(bench_spawn.children(helper.pid)) == 2, "the thread's child and the orphan it took in"
        with monkeypatch.context() as patched:
            patched.setattr(bench_spawn, "HAS_CHILDREN_FILES", False)
            scanned = parked.cpu_ticks([helper.pid])[helper.pid]
        assert walked == scanned, (walked, scanned)
    finally:
        for child in bench_spawn.children(helper.pid):
            os.kill(child, signal.SIGKILL)
        helper.kill()
        helper.wait()


def test_a_process_gone_counts_nothing():
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True)
    gone = int(done.stdout)
    assert parked.cpu_ticks([gone]) == {gone: 0}
