"""What the worker measures is the bench's own process tree: wall and CPU time with no launcher of ours
inside them, peak RSS never inherited from the worker (checked against ``/usr/bin/time -v``).

Real processes through ``execute_run`` (protocol time). No absolute upper bound on a time: the
kernel guarantees a floor (``sleep 0.1`` lasts at least 100 ms); everything else is a ratio.
"""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from statistics import median

import pandas as pd
import pytest
from fakebench.fakerepo import make_run

from orchestrator.worker.bench_task import execute_run

# What exec of a small binary plus scheduling may add to the least disturbed of 7 runs, even on a
# loaded 2-core machine (measured 4-8 ms at load 6); a Python launcher adds 30-80 ms there.
LAUNCH_ALLOWANCE_MS = 20.0
TOUCH_MIB = "import sys\nb = bytearray(int(sys.argv[1]) * 2**20)\nfor i in range(0, len(b), 4096): b[i] = 1\n"


def timed(repo, tmp_path, argv: tuple[str, ...], measure: int = 1, name: str = "run"):
    """(runs row, per-step wall/user/sys ms) of ``argv`` run ``measure`` times under protocol time."""
    run = replace(make_run(repo, repo.shas[0], results_root=tmp_path / "results", command=argv, params={},
                           sweep_id=name),
                  protocol="time", params={"measure": measure}, audit_modules=())
    outcome = execute_run(run)
    assert outcome.status == "ok", outcome.error
    steps = pd.read_parquet(outcome.steps_file).pivot(index="step", columns="phase", values="ms")
    return pd.read_parquet(outcome.runs_file).iloc[0], steps


def gnu_time_rss_mib(argv: list[str]) -> float:
    """``/usr/bin/time -v``'s maximum resident set size of ``argv``, in MiB (Debian's ``time``, which
    ``.ci/run`` installs; the independent figure is the point of these tests, so without it they skip)."""
    if not Path("/usr/bin/time").exists():
        pytest.skip("/usr/bin/time (Debian package time) is not installed")
    report = subprocess.run(["/usr/bin/time", "-v", *argv], capture_output=True, text=True, check=True).stderr
    return int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", report).group(1)) / 1024


def test_a_short_command_is_timed_without_a_launcher_inside(tmp_path, repo):
    """``sleep 0.05`` against ``sleep 0.1``: the truth is 0.5, and the kernel never sleeps less than
    asked. A launcher inside the measured window (a Python exec helper before: 0.741, 30-80 ms added)
    pulls the ratio toward 1. The least disturbed of 7 runs shows what the launcher itself adds."""
    _, short = timed(repo, tmp_path, ("sleep", "0.05"), measure=7, name="short")
    _, long = timed(repo, tmp_path, ("sleep", "0.1"), measure=7, name="long")
    assert short["wall_ms"].min() >= 50.0 and long["wall_ms"].min() >= 100.0
    added_ms = long["wall_ms"].min() - 100.0
    assert added_ms < LAUNCH_ALLOWANCE_MS, f"the launch added {added_ms:.1f} ms to a 100 ms sleep"
    ratio = short["wall_ms"].min() / long["wall_ms"].min()
    assert ratio < 0.6, f"wall ratio {ratio:.3f} (truth 0.5)"


def test_cpu_time_is_the_command_s_own(tmp_path, repo):
    """``sleep`` uses next to no CPU; a Python interpreter's start-up uses tens of ms. A launcher inside
    the bench's process would give ``sleep`` at least a start-up's worth."""
    _, sleep = timed(repo, tmp_path, ("sleep", "0.05"), measure=3, name="sleep")
    _, python = timed(repo, tmp_path, (sys.executable, "-I", "-S", "-c", "pass"), measure=3, name="python")
    cpu_ms = (sleep["user_ms"] + sleep["sys_ms"]).median()
    python_ms = (python["user_ms"] + python["sys_ms"]).median()
    assert cpu_ms < python_ms / 2, f"sleep took {cpu_ms:.1f} ms of CPU, a Python start-up {python_ms:.1f} ms"


def test_peak_rss_is_the_bench_s_own_never_the_worker_s(tmp_path, repo):
    """The worker (this process) first reaches a high-water mark far above the bench's; the bench's
    figure must still be its own, as ``/usr/bin/time -v`` measures it."""
    big = bytearray(256 * 2**20)
    big[::4096] = b"x" * len(big[::4096])  # touched: this process's peak RSS is now >= 256 MiB
    del big
    argv = (sys.executable, "-I", "-S", "-c", TOUCH_MIB, "48")
    row, _ = timed(repo, tmp_path, argv, name="rss")
    reference = median(gnu_time_rss_mib(list(argv)) for _ in range(3))
    assert row["rss_source"] == "rusage"
    assert abs(row["bench_max_rss_mib"] / reference - 1) < 0.05, (row["bench_max_rss_mib"], reference)
    assert row["max_rss_mib"] == row["bench_max_rss_mib"]


def test_a_bench_smaller_than_the_launcher_is_sampled_or_null(tmp_path, repo):
    """Below the launch helper's own peak the kernel's figure is the helper's: the sampled VmHWM of the
    bench is used instead, or none. (Within half a MiB of GNU time's: the environments differ a little.)"""
    row, _ = timed(repo, tmp_path, ("sleep", "0.3"), name="small")
    assert row["rss_source"] == "VmHWM"
    assert abs(row["bench_max_rss_mib"] - gnu_time_rss_mib(["sleep", "0.3"])) < 0.5
    instant, _ = timed(repo, tmp_path, ("true",), name="instant")
    sampled = instant["rss_source"] == "VmHWM"
    assert instant["rss_source"] in ("none", "VmHWM") and pd.isna(instant["bench_max_rss_mib"]) != sampled
    if sampled:
        assert abs(instant["bench_max_rss_mib"] - gnu_time_rss_mib(["true"])) < 0.5
