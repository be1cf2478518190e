"""A bench speaking run protocol v1 whose speed is a file of its commit, for bisect tests.

``bench_model.json`` next to this file says how fast this commit is (``step_ms``), how noisy its
measurements are (``noise``: the sigma of a log-normal factor on every run; ``alternate``: factors
taken in turn by this checkout's successive runs, a noise no number of rounds averages away) and
whether its bench fails (``fail``). The noise is seeded by the run's key (``SHASWEEP_RUN_KEY``), so a run is
reproducible; the bench sleeps only ``--sleep-ms`` per step, so tests stay short under load while
the reported timings follow the model.
"""

import argparse
import json
import math
import os
import random
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def git_sha() -> str | None:
    out = subprocess.run(["git", "-C", HERE, "rev-parse", "HEAD"], capture_output=True, text=True)
    return out.stdout.strip() or None


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--stream", required=True)
    parser.add_argument("--warmup", type=int, default=0)
    parser.add_argument("--measure", type=int, default=2)
    parser.add_argument("--num-envs", type=int, default=8)
    parser.add_argument("--sleep-ms", type=float, default=1.0)
    args = parser.parse_args()
    with open(os.path.join(HERE, "bench_model.json"), encoding="utf-8") as f:
        model = json.load(f)
    rng = random.Random(os.environ.get("SHASWEEP_RUN_KEY", ""))
    factor = math.exp(rng.gauss(0.0, float(model.get("noise", 0.0))))
    if model.get("alternate"):
        count_file = os.path.join(HERE, ".step_bench_runs")
        count = int(open(count_file).read()) if os.path.exists(count_file) else 0
        with open(count_file, "w") as f:
            f.write(str(count + 1))
        factor *= model["alternate"][count % len(model["alternate"])]
    step_ms = float(model["step_ms"]) * factor
    with open(args.stream, "w", buffering=1) as stream:
        def emit(record: dict) -> None:
            stream.write(json.dumps(record) + "\n")

        emit({"kind": "header", "protocol": 1,
              "case": {"algo": "sac", "task": "fake", "sim": "none", "variant": "manager"},
              "params": {"num_envs": args.num_envs, "warmup": args.warmup, "measure": args.measure},
              "audit": {"module_file": os.path.abspath(__file__), "git_sha": git_sha(),
                        "env_class": "StepBenchEnv", "managers": []}})
        if model.get("fail"):
            emit({"kind": "error", "type": "RuntimeError", "message": "this commit's bench is broken"})
            return 1
        for step in range(args.warmup + args.measure):
            time.sleep(args.sleep_ms / 1000)
            emit({"kind": "step", "step": step, "warmup": step < args.warmup, "resets": 0,
                  "phases": {"physics_ms": step_ms}})
        wall = args.measure * step_ms / 1000
        emit({"kind": "summary", "throughput": args.num_envs * args.measure / wall, "measure_wall_s": wall,
              "phase_means_ms": {"physics_ms": step_ms}})
    return 0


if __name__ == "__main__":
    sys.exit(main())
