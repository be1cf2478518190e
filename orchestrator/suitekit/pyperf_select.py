"""Run only the listed benchmarks of a pyperf script, with pyperf itself (docs/design.md, "Suites in
lockstep", falling back): a lockstep round runs a script's cases that cannot run in its process (a
``bench_command``) as one separate process per side:

    python -m orchestrator.suitekit.pyperf_select --select FILE bench.py [its args]

``FILE`` is a JSON list of benchmark names. pyperf's ``Runner`` runs as always (its worker processes
run the script itself); a benchmark not listed is skipped in this process as pyperf's own workers
skip another task's, counting it, so every worker's task number still names the same benchmark.
"""

from __future__ import annotations

import argparse
import json
import sys

import pyperf

from orchestrator.suitekit.pyperf_shim import run_script


def selecting_runner(wanted: set[str]) -> type[pyperf.Runner]:
    """A ``pyperf.Runner`` that runs only the benchmarks named in ``wanted``."""

    class SelectingRunner(pyperf.Runner):
        def _skipped(self, name: str) -> bool:
            if name in wanted:
                return False
            self._worker_task += 1  # as Runner._check_worker_task counts a task it skips
            return True

        def bench_func(self, name, *args, **kwargs):
            return None if self._skipped(name) else super().bench_func(name, *args, **kwargs)

        def bench_time_func(self, name, *args, **kwargs):
            return None if self._skipped(name) else super().bench_time_func(name, *args, **kwargs)

        def bench_async_func(self, name, *args, **kwargs):
            return None if self._skipped(name) else super().bench_async_func(name, *args, **kwargs)

        def bench_command(self, name, command):
            return None if self._skipped(name) else super().bench_command(name, command)

        def timeit(self, name, *args, **kwargs):
            return None if self._skipped(name) else super().timeit(name, *args, **kwargs)

    return SelectingRunner


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m orchestrator.suitekit.pyperf_select")
    parser.add_argument("--select", required=True, help="a JSON list of the benchmark names to run")
    parser.add_argument("target", nargs=argparse.REMAINDER, help="the script and its arguments, or -m module")
    parsed = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if not parsed.target:
        parser.error("give the pyperf script (or -m module) and its arguments")
    with open(parsed.select, encoding="utf-8") as listed:
        wanted = set(json.load(listed))
    run_script(parsed.target, selecting_runner(wanted))
    return 0


if __name__ == "__main__":
    sys.exit(main())
