"""A tiny bench speaking run protocol v1, for orchestrator tests (no envruntime involved).

Its speed is part of its source (``WORK_MS``), so two commits of it report different numbers.
``--mode`` makes it misbehave in the ways the orchestrator must handle.
"""

import argparse
import json
import os
import subprocess
import sys
import time

WORK_MS = 4.0
PROTOCOL = 1


def git_sha() -> str | None:
    here = os.path.dirname(os.path.abspath(__file__))
    out = subprocess.run(["git", "-C", here, "rev-parse", "HEAD"], capture_output=True, text=True)
    return out.stdout.strip() or None


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--stream", required=True)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--measure", type=int, default=3)
    parser.add_argument("--num-envs", type=int, default=8)
    parser.add_argument("--step-ms", type=float, default=WORK_MS)
    parser.add_argument("--threads", default="")
    parser.add_argument("--mode", default="ok",
                        choices=["ok", "fail", "crash", "hang", "malformed", "protocol2", "no-summary",
                                 "negative", "nan", "repeat-step", "inflate"])
    parser.add_argument("--inflate-unless", default="",
                        help="report a throughput 10x too high unless this file exists")
    parser.add_argument("--child-pid-file", default="")
    parser.add_argument("--slow-while", default="", help="each step takes 3 s while this file exists")
    args = parser.parse_args()
    print("fake bench stdout noise", flush=True)
    with open(args.stream, "w", buffering=1) as stream:
        def emit(record: dict) -> None:
            stream.write(json.dumps(record) + "\n")

        emit({"kind": "header", "protocol": 2 if args.mode == "protocol2" else PROTOCOL,
              "case": {"algo": "sac", "task": "fake", "sim": "none", "variant": "manager"},
              "params": {"num_envs": args.num_envs, "warmup": args.warmup, "measure": args.measure},
              "audit": {"module_file": os.path.abspath(__file__), "git_sha": git_sha(),
                        "env_class": "FakeEnv", "managers": ["action", "reward"],
                        "threads": {"OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS")},
                        "pid": os.getpid(), "pythonpath": os.environ.get("PYTHONPATH", ""),
                        # the packages it "runs on", as a host's installed versions would be
                        "versions": json.loads(os.environ.get("FAKE_BENCH_VERSIONS") or "{}")}})
        emit({"kind": "note", "text": "unknown kinds are ignored by readers"})
        if args.mode == "fail":
            emit({"kind": "error", "type": "ValueError", "message": "unknown task 'fake'"})
            return 2
        if args.mode == "crash":
            print("Traceback: something broke inside the bench", file=sys.stderr)
            return 1
        if args.mode == "malformed":
            stream.write("{not json\n")
        if args.mode == "hang":
            child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
            with open(args.child_pid_file, "w") as f:
                f.write(str(child.pid))
            time.sleep(600)
        started = time.perf_counter()
        for step in range(args.warmup + args.measure):
            if step == args.warmup:
                started = time.perf_counter()
            t0 = time.perf_counter()
            time.sleep(3.0 if args.slow_while and os.path.exists(args.slow_while) else args.step_ms / 1000)
            ms = (time.perf_counter() - t0) * 1000
            phases = {"physics_ms": ms * 0.75, "update_state_ms": ms * 0.25, "work_setting_ms": WORK_MS}
            if step == args.warmup and args.mode in ("negative", "nan"):
                phases["physics_ms"] = -ms if args.mode == "negative" else float("nan")
            if step == args.warmup + 1 and args.mode == "repeat-step":
                step -= 1
            emit({"kind": "step", "step": step, "warmup": step < args.warmup, "resets": 0, "later_field": 1,
                  "phases": phases})
        wall = time.perf_counter() - started
        if args.mode != "no-summary":
            means = {"physics_ms": args.step_ms * 0.75, "update_state_ms": args.step_ms * 0.25,
                     "work_setting_ms": WORK_MS}
            unless = args.inflate_unless
            lying = args.mode == "inflate" or bool(unless) and not os.path.exists(unless)
            factor = 10 if lying else 1
            emit({"kind": "summary", "throughput": args.num_envs * args.measure / wall * factor,
                  "measure_wall_s": wall, "phase_means_ms": means})
    return 0


if __name__ == "__main__":
    sys.exit(main())
