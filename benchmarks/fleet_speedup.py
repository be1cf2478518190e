"""Sweep wall time against the number of bench hosts, measured in one run on this machine.

Starts one ``shasweep scheduler`` and three ``shasweep worker`` processes on loopback, each with its
own ``SHASWEEP_HOST_ID`` (h1, h2, h3) and home, then runs the same sweep of ROUNDS rounds (two runs
each, one per side) of the fake bench (tests/orchestrator/fakebench), which sleeps BENCH_S seconds
per run, on ``hosts: [h1]``, ``[h1, h2]`` and ``[h1, h2, h3]``; prints each wall time and the speed-up
over one host. The bench sleeps, so the figures say what the dispatch does, not how many cores are
free; the target is a speed-up of at least 0.9 x the host count for 18+ rounds.

Usage: python benchmarks/fleet_speedup.py [--rounds 18] [--bench-s 2]
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack, contextmanager
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "orchestrator"))
from fakebench.fakerepo import make_fake_repo, make_run  # noqa: E402

from orchestrator.dispatch.cluster import free_port  # noqa: E402
from orchestrator.dispatch.dispatcher import dispatch_runs  # noqa: E402

STEP_MS = 100.0
HOSTS = ("h1", "h2", "h3")
_ADDRESS = re.compile(r"shasweep (?:scheduler|worker) at (tcp://[\d.]+:\d+)")


@contextmanager
def serving(argv: list[str], env: dict[str, str]):
    """Start a ``shasweep`` server, wait for its address line, SIGTERM it on exit."""
    proc = subprocess.Popen([sys.executable, "-m", "orchestrator.cli", *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, env={**os.environ, **env})
    try:
        for line in proc.stdout:
            if match := _ADDRESS.search(line):
                yield match.group(1)
                break
        else:
            raise RuntimeError(f"{argv[0]} did not start")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=18)
    parser.add_argument("--bench-s", type=float, default=2.0)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="shasweep-fleet-"))
    repo = make_fake_repo(root)
    measure = max(1, round(args.bench_s * 1000 / STEP_MS))
    params = {"num_envs": 8, "warmup": 0, "measure": measure, "threads": 1}
    port = free_port(18786)
    with ExitStack() as stack:
        dashboard = f"127.0.0.1:{free_port(port + 1)}"
        scheduler = stack.enter_context(serving(["scheduler", "--port", str(port), "--dashboard-address",
                                                 dashboard], {}))
        for host in HOSTS:
            stack.enter_context(serving(["worker", scheduler, "--name", host],
                                        {"SHASWEEP_HOST_ID": host, "SHASWEEP_HOME": str(root / host)}))
        print(f"{args.rounds} rounds x 2 runs x {args.bench_s:g} s of sleeping fake bench; "
              f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
        walls = {}
        for count in range(1, len(HOSTS) + 1):
            sweep_id = f"fleet-{count}"
            runs = [make_run(repo, repo.shas[i % 2], order=i, results_root=root / "results", params=params,
                             extra_args=("--step-ms", str(STEP_MS)), sweep_id=sweep_id)
                    for i in range(2 * args.rounds)]
            plan = [replace(run, repeat=run.order // 2) for run in runs]  # rounds of one run per side
            started = time.monotonic()
            outcome = dispatch_runs(plan, scheduler=scheduler, continue_on_error=False, show_progress=False,
                                hosts=list(HOSTS[:count]))
            walls[count] = time.monotonic() - started
            assert all(o.status == "ok" for o in outcome.runs), [o.error for o in outcome.runs]
            speedup = walls[1] / walls[count]
            print(f"{count} host(s): {walls[count]:7.1f} s, speed-up {speedup:.2f} "
                  f"({speedup / count:.2f} x the host count)")


if __name__ == "__main__":
    main()
