"""The launch helper's RSS floor (``worker.bench_spawn``): a bench's ``ru_maxrss`` starts at the
helper's high-water mark at the fork, so the floor the helper reports must be at least that, or a
bench that does nothing is given the helper's figure as its own (``rss_source == "rusage"``).

Real helper, real ``posix_spawn`` of ``true``: each launch carries a larger environment than the
last, which the helper converts for the spawn and so grows by, just before the fork."""

from __future__ import annotations

import os

from orchestrator.worker.helper_pool import LaunchHelper
from orchestrator.worker.proc import peak_rss_kib

ENV_CHUNK = "x" * (96 * 1024)  # under the kernel's 128 KiB limit on one environment string


def test_a_bench_that_does_nothing_never_rises_above_the_helpers_floor(tmp_path):
    helper = LaunchHelper()
    try:
        for launch in range(1, 13):
            env = {"PATH": os.environ["PATH"], **{f"GROWN_{i}": ENV_CHUNK for i in range(launch)}}
            helper.send({"argv": ["true"], "cwd": str(tmp_path), "env": env, "cpus": None,
                         "stdout": str(tmp_path / "out.log"), "stderr": str(tmp_path / "err.log")})
            started = helper.receive(block=True)
            assert "started" in started, started
            reaped = helper.receive(block=True)
            assert os.WIFEXITED(reaped["status"]) and os.WEXITSTATUS(reaped["status"]) == 0
            _, source = peak_rss_kib(reaped["maxrss_kib"], reaped["hwm_kib"], started["floor_kib"])
            assert source != "rusage", (launch, reaped["maxrss_kib"], started["floor_kib"])
    finally:
        helper.close()
