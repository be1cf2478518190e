"""A bench speaking run protocol v1 that reports as many steps as it is asked for, as fast as it can
write them (the million-step drill: the worker's memory must not grow with the steps).

Run from a fake repository's worktree (its cwd): ``git rev-parse HEAD`` there is the SHA under test,
and its ``fake_bench.py`` is the module the run audit checks. Every step reports three phases; the
summary's throughput is consistent with them (each measured step lasts 1 ms).
"""

import argparse
import json
import os
import subprocess
import sys

STEP_MS = 1.0
CHUNK = 10_000  # steps written at once


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--stream", required=True)
    parser.add_argument("--warmup", type=int, default=0)
    parser.add_argument("--measure", type=int, required=True)
    parser.add_argument("--num-envs", type=int, default=8)
    args = parser.parse_args()
    sha = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    phases = {"collector_step_ms": STEP_MS, "physics_ms": STEP_MS / 2, "update_state_ms": STEP_MS / 4}
    tail = ', "phases": ' + json.dumps(phases) + "}\n"
    total = args.warmup + args.measure
    with open(args.stream, "w") as stream:
        stream.write(json.dumps({"kind": "header", "protocol": 1,
                                 "case": {"algo": "sac", "task": "fake", "sim": "none", "variant": "manager"},
                                 "params": {"num_envs": args.num_envs, "measure": args.measure},
                                 "audit": {"module_file": os.path.abspath("fake_bench.py"), "git_sha": sha,
                                           "pid": os.getpid()}}) + "\n")
        for first in range(0, total, CHUNK):
            steps = range(first, min(first + CHUNK, total))
            stream.write("".join(f'{{"kind": "step", "step": {i}, "warmup": {json.dumps(i < args.warmup)}'
                                 + tail for i in steps))
        window = args.measure * STEP_MS / 1000
        stream.write(json.dumps({"kind": "summary", "throughput": args.num_envs * args.measure / window,
                                 "measure_wall_s": window,
                                 "phase_means_ms": phases}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
