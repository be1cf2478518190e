"""Bench process launching: no orphans when the launching process dies, group kill, stderr tail, one
launch helper kept for the next launch."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import psutil
from fakebench.waits import is_gone, wait_for

from orchestrator.worker.proc import file_tail, kill_group, launch

LAUNCHER = """
import sys, time
from pathlib import Path
from orchestrator.worker.proc import launch
d = Path(sys.argv[1])
child = launch([sys.executable, "-c", "import time; time.sleep(120)"], cwd=d, env={}, stdout_path=d / "out",
               stderr_path=d / "err")
print(child.pid, flush=True)
time.sleep(120)
"""


def test_bench_dies_with_the_process_that_launched_it(tmp_path):
    launcher = subprocess.Popen([sys.executable, "-c", LAUNCHER, str(tmp_path)], stdout=subprocess.PIPE,
                                text=True)
    bench_pid = int(launcher.stdout.readline())
    assert psutil.Process(bench_pid).status() != psutil.STATUS_ZOMBIE
    assert os.getsid(bench_pid) == bench_pid, "the bench runs in its own session"
    launcher.send_signal(signal.SIGKILL)  # a worker killed hard: no cleanup code runs
    launcher.wait()
    wait_for(lambda: is_gone(bench_pid), "the bench to die with the process that launched it")


def test_kill_group_and_stderr_tail(tmp_path):
    script = "import sys, time; sys.stderr.write('x' * 5000 + 'END'); sys.stderr.flush(); time.sleep(120)"
    proc = launch([sys.executable, "-c", script], cwd=tmp_path, env={}, stdout_path=tmp_path / "out",
                  stderr_path=tmp_path / "err", cpus={0})
    deadline = time.monotonic() + 10
    while not file_tail(tmp_path / "err").endswith("END") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert psutil.Process(proc.pid).cpu_affinity() == [0]
    kill_group(proc)
    assert proc.returncode == -signal.SIGKILL
    tail = file_tail(tmp_path / "err", max_bytes=100)
    assert len(tail) == 100 and tail.endswith("END")
    assert file_tail(tmp_path / "missing") == ""


def test_a_launch_helper_that_dies_takes_its_bench_along(tmp_path):
    proc = launch(["sleep", "120"], cwd=tmp_path, env=dict(os.environ), stdout_path=tmp_path / "out",
                  stderr_path=tmp_path / "err")
    psutil.Process(proc.pid).parent().send_signal(signal.SIGKILL)  # the helper, not the bench
    assert proc.wait() == -signal.SIGKILL and proc.usage is None
    wait_for(lambda: is_gone(proc.pid), "the orphaned bench to be killed")


def test_a_launch_helper_serves_the_next_launch_and_a_second_bench_at_once_gets_its_own(tmp_path):
    def start():
        return launch(["sleep", "60"], cwd=tmp_path, env=dict(os.environ), stdout_path=tmp_path / "out",
                      stderr_path=tmp_path / "err")

    first = start()
    helper = psutil.Process(first.pid).ppid()
    kill_group(first)
    assert first.returncode == -signal.SIGKILL and first.floor_kib > 0
    running = start()
    assert psutil.Process(running.pid).ppid() == helper, "the idle helper started the next bench"
    beside = start()
    assert psutil.Process(beside.pid).ppid() != helper, "a bench running keeps its helper busy"
    for proc in (running, beside):
        kill_group(proc)
        assert proc.returncode == -signal.SIGKILL


def test_an_idle_helper_that_died_is_replaced(tmp_path):
    def start(*argv: str):
        return launch(list(argv), cwd=tmp_path, env=dict(os.environ), stdout_path=tmp_path / "out",
                      stderr_path=tmp_path / "err")

    first = start("sleep", "60")
    helper = psutil.Process(first.pid).ppid()
    kill_group(first)
    os.kill(helper, signal.SIGKILL)
    wait_for(lambda: is_gone(helper), "the helper to die")
    again = start("true")
    assert again.wait() == 0 and again.usage is not None
