"""A lockstep bench (the control channel, written by hand: no benchkit) that misbehaves while parked,
for the drills of what a parked side can do to a round. Run from the worktree (its cwd), so ``git
rev-parse HEAD`` there is the SHA under test.

Every step busy-works ``--step-ms``. ``--mode``:

* ``ok``: behaves.
* ``fill-control``: fills its own control FIFO (write-only, non-blocking, until the pipe is full),
  writes its header, then sleeps and never reads the FIFO.
* ``hog``: while parked (from each block record to the next command) a child process spins on a CPU.
* ``flood``: once parked after its first block, writes ``--flood-mib`` MiB of blank lines to its
  stream (what the worker would have to read at its next turn), then parks.
* ``inf-times``: its block records say ``"started": Infinity`` and ``"ended": -Infinity``.

``--role victim`` makes it behave whatever its mode (a sweep gives one side that role).
"""

import argparse
import errno
import json
import os
import subprocess
import sys
import time


def module_file() -> str:
    """The benchmarked repository's module when its worktree has one (the run audit checks the loaded
    module lies in the worktree), else this file."""
    for name in ("fake_bench.py", "lockstep_bench.py"):
        if os.path.exists(name):
            return os.path.abspath(name)
    return os.path.abspath(__file__)


def fill(control: str) -> None:
    """Write to the FIFO until it has no room left."""
    fd = os.open(control, os.O_WRONLY | os.O_NONBLOCK)
    try:
        while True:
            os.write(fd, b"x" * 4096)
    except OSError as exc:
        if exc.errno != errno.EAGAIN:
            raise


def busy(ms: float) -> None:
    until = time.perf_counter() + ms / 1000
    while time.perf_counter() < until:
        pass


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--stream", required=True)
    parser.add_argument("--control", required=True)
    parser.add_argument("--mode", default="ok", choices=["ok", "fill-control", "hog", "flood", "inf-times"])
    parser.add_argument("--step-ms", type=float, default=2.0)
    parser.add_argument("--flood-mib", type=int, default=150)
    parser.add_argument("--role", default="hostile", choices=["hostile", "victim"])
    args, _ = parser.parse_known_args()
    if args.role == "victim":
        args.mode = "ok"
    sha = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    if args.mode == "fill-control":
        fill(args.control)  # before the header: the worker's first command finds no room
    with open(args.stream, "w", buffering=1) as stream:
        def emit(**record: object) -> None:
            stream.write(json.dumps(record) + "\n")
            stream.flush()

        emit(kind="header", protocol=1, control=1, case={"name": "hostile"}, params={"mode": args.mode},
             audit={"module_file": module_file(), "git_sha": sha, "pid": os.getpid()})
        if args.mode == "fill-control":
            time.sleep(600)
        step, measured, wall, hog, flooded = 0, 0, 0.0, None, False
        with open(args.control, encoding="utf-8") as channel:
            for line in channel:
                if hog is not None:  # the host is ours again: the hog stops
                    hog.kill()
                    hog.wait()
                    hog = None
                command = json.loads(line)
                if command["cmd"] == "end":
                    break
                started, t0 = time.time(), time.perf_counter()
                for _ in range(command["steps"]):
                    s0 = time.perf_counter()
                    busy(args.step_ms)
                    emit(kind="step", step=step, warmup=command["warmup"], block=command["block"],
                         phases={"step_ms": (time.perf_counter() - s0) * 1000})
                    step += 1
                took = time.perf_counter() - t0
                if not command["warmup"]:
                    measured, wall = measured + command["steps"], wall + took
                times = (float("inf"), float("-inf")) if args.mode == "inf-times" else (started, time.time())
                emit(kind="block", block=command["block"], steps=command["steps"], wall_s=took,
                     warmup=command["warmup"], started=times[0], ended=times[1])
                if args.mode == "hog":
                    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
                if args.mode == "flood" and not flooded:
                    flooded = True
                    for _ in range(args.flood_mib):
                        stream.write("\n" * 2**20)
                    stream.flush()
        if measured and wall > 0:
            emit(kind="summary", throughput=measured / wall, measure_wall_s=wall,
                 phase_means_ms={"step_ms": 1000 * wall / measured})
    return 0


if __name__ == "__main__":
    sys.exit(main())
