"""A bench written with ``orchestrator.benchkit`` (so it takes the control channel), for lockstep tests.

Each step busy-works ``--step-ms`` (default 2); the header's params carry ``born``, the time this
process began (before its imports), so a test can tell when each process ran. Misbehaviour on request:
``--no-control`` ignores ``--control`` (an older bench: no ``"control"`` in its header);
``--wait-file PATH`` makes every step wait until PATH exists; ``--crash-at-step N`` exits 3 in the
middle of step N, and ``--crash-file PATH`` does so only while PATH exists. ``--returns`` says what a
step returns: nothing (default), ``bytes``, ``counts`` (a dict of counts, as a word counter would) or
``phases`` (the busy work timed as ``spin_ms`` with ``bench.phase``, and ``Phases(check_ms=...)``
returned). ``--work hash`` does a fixed amount of work instead of spinning for a time: ``step_ms`` x
``HASHES_PER_MS`` SHA-256 digests of 4 KiB, so two commits' CPU time per step stands in the ratio of
their ``step_ms`` however busy the host is.
"""

import time

BORN = time.time()

import argparse  # noqa: E402 - after BORN, so that it counts the start-up
import contextlib  # noqa: E402
import hashlib  # noqa: E402
import os  # noqa: E402

from orchestrator.benchkit import Bench, Phases  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("--no-control", action="store_true")
parser.add_argument("--wait-file")
parser.add_argument("--crash-at-step", type=int, default=-1)
parser.add_argument("--crash-file")
parser.add_argument("--returns", choices=("none", "bytes", "counts", "phases"), default="none")
parser.add_argument("--work", choices=("spin", "hash"), default="spin")
args, rest = parser.parse_known_args()
if args.no_control and "--control" in rest:
    del rest[rest.index("--control"):rest.index("--control") + 2]
bench = Bench("fake/lockstep", module=__file__, options={"step_ms": 2.0}, argv=rest)
bench.params["born"] = BORN
steps_done = 0
HASHES_PER_MS = 100
BLOCK = b"\x5a" * 4096


def step() -> object:
    global steps_done
    if steps_done == args.crash_at_step and (args.crash_file is None or os.path.exists(args.crash_file)):
        os._exit(3)
    while args.wait_file and not os.path.exists(args.wait_file):
        time.sleep(0.01)
    with bench.phase("spin_ms") if args.returns == "phases" else contextlib.nullcontext():
        if args.work == "hash":
            for _ in range(round(bench.params["step_ms"] * HASHES_PER_MS)):
                hashlib.sha256(BLOCK).digest()
        else:
            until = time.perf_counter() + bench.params["step_ms"] / 1000
            while time.perf_counter() < until:
                pass
    steps_done += 1
    return RETURNS[args.returns]()


RETURNS = {"none": lambda: None, "bytes": lambda: b"\x00" * 64, "counts": lambda: {"the": 4000, "fox": 2000},
           "phases": lambda: Phases(check_ms=0.25)}


bench.run(step)
