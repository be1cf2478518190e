"""A noisy neighbour: loads the host's CPUs in seeded random bursts, for benchmarks that measure how
a sweep design copes with a busy host (``benchmarks/ab_validity.py --neighbour``).

It alternates quiet spells and bursts, each lasting a random ``--burst-s`` / ``--quiet-s`` seconds
(uniform, default 1-10 s). A burst keeps a random number of worker processes busy, from 1 to
``--workers`` (default: the CPUs of this process's affinity), each hashing (``cpu``) or copying a
64 MiB buffer (``memory``: it also evicts caches), chosen per burst for ``mixed``. The schedule comes
from ``random.Random(--seed)`` alone, so a seed replays the same bursts (their timing still depends
on the host). Each burst is logged to ``--log`` as a JSON line (start, end, workers, kind; epoch
seconds) so a run can be matched against them. It runs for ``--duration-s`` seconds, or until
SIGTERM / SIGINT; its workers stop with it, and on their own when it dies.

    python benchmarks/neighbour.py --seed 1 --log /tmp/neighbour.jsonl &

A benchmark runs it beside a block with ``running`` (``from neighbour import running``).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import multiprocessing as mp
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

CHUNK_S = 0.005  # how long a worker works between looks at its switch
MEMORY_BYTES = 64 * 1024 * 1024
KINDS = ("cpu", "memory", "mixed")


@contextlib.contextmanager
def running(seed: int, log: Path | None = None, *options: str) -> Iterator[subprocess.Popen]:
    """This script in a child process (``--seed``, ``--log`` and any other ``options``) for the
    ``with`` block; then SIGTERM, and its workers stop with it."""
    argv = [sys.executable, __file__, "--seed", str(seed), *(["--log", str(log)] if log else []), *options]
    proc = subprocess.Popen(argv)
    try:
        yield proc
    finally:
        proc.terminate()
        proc.wait()


def worker(busy, kind, parent: int) -> None:
    """Work while ``busy`` is set (``kind`` a shared value: 0 cpu, 1 memory); exit with the parent."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    block, buffer = b"\x5a" * 4096, None
    while os.getppid() == parent:
        if not busy.wait(timeout=1.0):
            continue
        if kind.value == 1 and buffer is None:
            buffer = bytearray(MEMORY_BYTES)
        until = time.perf_counter() + CHUNK_S
        while time.perf_counter() < until:
            if kind.value == 1:
                bytes(buffer)
            else:
                hashlib.sha256(block).digest()


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=len(os.sched_getaffinity(0)),
                        help="most busy processes in a burst (default: the CPUs of the affinity)")
    parser.add_argument("--burst-s", type=float, nargs=2, default=(1.0, 10.0), metavar=("MIN", "MAX"))
    parser.add_argument("--quiet-s", type=float, nargs=2, default=(1.0, 10.0), metavar=("MIN", "MAX"))
    parser.add_argument("--kind", choices=KINDS, default="mixed")
    parser.add_argument("--duration-s", type=float, default=float("inf"))
    parser.add_argument("--log", type=Path, help="append one JSON line per burst")
    args = parser.parse_args(argv)
    if args.workers < 1 or min(*args.burst_s, *args.quiet_s) < 0:
        parser.error("--workers must be >= 1 and durations >= 0")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    rng = random.Random(args.seed)
    context = mp.get_context("fork")
    switches = [context.Event() for _ in range(args.workers)]
    kinds = [context.Value("i", 0) for _ in range(args.workers)]
    procs = [context.Process(target=worker, args=(s, k, os.getpid()), daemon=True)
             for s, k in zip(switches, kinds, strict=True)]
    for proc in procs:
        proc.start()
    stopping = []
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stopping.append(True))
    ends = time.monotonic() + args.duration_s
    log = open(args.log, "a", encoding="utf-8") if args.log else None  # noqa: SIM115 - closed below
    try:
        while not stopping and time.monotonic() < ends:
            _sleep(rng.uniform(*args.quiet_s), ends, stopping)
            workers = rng.randint(1, args.workers)
            kind = args.kind if args.kind != "mixed" else rng.choice(("cpu", "memory"))
            length = rng.uniform(*args.burst_s)
            started = time.time()
            for switch, value in zip(switches[:workers], kinds[:workers], strict=True):
                value.value = 1 if kind == "memory" else 0
                switch.set()
            _sleep(length, ends, stopping)
            for switch in switches:
                switch.clear()
            if log:
                log.write(json.dumps({"start": started, "end": time.time(), "workers": workers,
                                      "kind": kind}) + "\n")
                log.flush()
    finally:
        for switch in switches:
            switch.clear()
        for proc in procs:
            proc.terminate()
            proc.join()
        if log:
            log.close()
    return 0


def _sleep(seconds: float, ends: float, stopping: list) -> None:
    """Sleep ``seconds``, waking early at the deadline or when a signal asks to stop."""
    until = min(time.monotonic() + seconds, ends)
    while not stopping and time.monotonic() < until:
        time.sleep(min(0.1, max(0.0, until - time.monotonic())))


if __name__ == "__main__":
    sys.exit(main())
