"""The runtime on a busy host (issue 43): each figure measured with ``benchmarks/neighbour.py`` running,
beside the same figure in the same run with the host as it is (run it when nothing else runs).

    python benchmarks/busy_host.py [--parts kernels,ratio,smoke] [--seed 0] [--neighbour-options=...]
        [--kernel-cases g1_motion_tracking:4096,go2_joystick_flat:256] [--threads 2] [--steps 60]
        [--ratio-num-envs 2048] [--rounds 5] [--ratio-steps 20] [--smoke-runs 10]

* ``kernels``: one process steps three collectors of the same manager env (MuJoCo, pregenerated
  actions) in turn, one step each: on 1 thread (physics and kernels), on ``--threads`` with the row
  kernels fixed on all of them (the rule before issue 43, ``ENVRUNTIME_KERNEL_THREADS=fixed``), and on
  ``--threads`` with the kernels' count chosen step by step (the rule now); ``--steps`` steps each with
  the host as it is, then as many with the neighbour. Printed: each arm's median ``update_state_ms`` and
  its ratio to the 1-thread arm's. Targets: the adaptive arm <= 1.3x with the neighbour, <= 0.6x
  without (G1 motion tracking, N=4096, 2 threads).
* ``ratio``: manager/direct throughput at ``--ratio-num-envs`` from ``envruntime.bench`` subprocesses
  (Go2, pregenerated actions, 3 warm-up + ``--ratio-steps`` measured steps), ``--rounds`` rounds with
  the host as it is and as many with the neighbour; each round runs manager then direct under each
  rule. Printed: the CV of the per-round ratio per rule and condition. Target: with the neighbour at
  most 2x the CV without.
* ``smoke``: ``shasweep run sweeps/smoke.yaml`` once to build its worktree and Numba cache (not
  counted), then ``--smoke-runs`` times with the neighbour. Printed: each sweep's verdict line and wall
  time. Target: every one PASS, each within the time the README states.

The neighbour is started and stopped by this script (``--seed``; ``--neighbour-options="--quiet-s 0 0
--kind cpu"`` makes its load steady). Ratios are read within one run; the load average is printed
before and after each condition.
"""

from __future__ import annotations

import argparse
import contextlib
import shlex
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from neighbour import running
from runtime_overhead import REPO, OverheadConfig, run_collector

from envruntime.collect.collector import Collector, make_collector
from envruntime.envs.kernel_threads import KernelThreads
from envruntime.tasks import make_env

PARTS: tuple[str, ...] = ("kernels", "ratio", "smoke")
CONDITIONS: tuple[str, ...] = ("as it is", "neighbour")
RULES: tuple[str, ...] = ("fixed", "adaptive")
KERNEL_WARMUP = 5  # steps per arm before each condition's measured steps


def host(condition: str, args: argparse.Namespace,
         log: Path | None = None) -> contextlib.AbstractContextManager:
    """The neighbour running for the ``with`` block under condition ``neighbour``; nothing otherwise."""
    if condition != "neighbour":
        return contextlib.nullcontext()
    return running(args.seed, log, *args.neighbour_options)


def load() -> str:
    with open("/proc/loadavg") as f:
        return "load average " + " ".join(f.read().split()[:3])


@dataclass
class Arm:
    """One collector of the kernels part and the ``update_state_ms`` of its measured steps."""

    name: str
    collector: Collector
    update_ms: list[float]

    @property
    def chooser(self) -> KernelThreads:
        return self.collector.env.kernel_threads


def kernel_arms(task: str, num_envs: int, threads: int) -> list[Arm]:
    arms = []
    for name, count, rule in (("1 thread", 1, "fixed"), (f"{threads} fixed", threads, "fixed"),
                              (f"{threads} adaptive", threads, "adaptive")):
        env = make_env(task, "mujoco", "manager", num_envs, count)
        env.kernel_threads = KernelThreads(count, rule)
        collector = make_collector(env, "sac", 4, "pregenerated", "cpu", 0)
        collector.reset(0)
        arms.append(Arm(name, collector, []))
    return arms


def step_in_turn(arms: list[Arm], steps: int, measured: bool) -> None:
    for _ in range(steps):
        for arm in arms:
            ms = arm.collector.step().phases["update_state_ms"]
            if measured:
                arm.update_ms.append(ms)


def kernels_condition(arms: list[Arm], steps: int) -> None:
    """Warm-up steps, then ``steps`` measured steps of each arm in turn; print the ratios."""
    step_in_turn(arms, KERNEL_WARMUP, measured=False)
    for arm in arms:
        arm.update_ms.clear()
    used_before = Counter(arms[-1].chooser.used)
    step_in_turn(arms, steps, measured=True)
    base = float(np.median(arms[0].update_ms))
    for arm in arms:
        median = float(np.median(arm.update_ms))
        print(f"    {arm.name:<12} update_state_ms median {median:8.2f} mean {np.mean(arm.update_ms):8.2f}  "
              f"/ 1 thread {median / base:6.3f}", flush=True)
    used = Counter(arms[-1].chooser.used) - used_before
    print(f"    adaptive arm's steps per thread count: {dict(sorted(used.items()))}", flush=True)


def kernels(args: argparse.Namespace) -> None:
    for case in args.kernel_cases.split(","):
        task, num_envs = case.split(":")
        print(f"kernels: {task} manager on mujoco, N={num_envs}, pregenerated actions, three arms stepped in "
              f"turn, {args.steps} measured steps each", flush=True)
        arms = kernel_arms(task, int(num_envs), args.threads)
        try:
            for condition in CONDITIONS:
                print(f"  {condition}: {load()}", flush=True)
                with host(condition, args):
                    kernels_condition(arms, args.steps)
            print(f"  {load()}", flush=True)
        finally:
            for arm in arms:
                arm.collector.env.close()


def ratio_rounds(cfg: OverheadConfig, rounds: int) -> dict[str, list[float]]:
    """Per rule, the manager/direct throughput ratio of each round."""
    ratios: dict[str, list[float]] = {rule: [] for rule in RULES}
    for round_ in range(rounds):
        for rule in RULES if round_ % 2 == 0 else RULES[::-1]:
            ruled = replace(cfg, kernel_policy=rule)
            manager, direct = (run_collector(ruled, variant, cfg.num_envs, cfg.steps).summary["throughput"]
                               for variant in ("manager", "direct"))
            ratios[rule].append(manager / direct)
            print(f"    round {round_} {rule:<8} manager {manager:9.1f}  direct {direct:9.1f}  "
                  f"ratio {manager / direct:6.3f}", flush=True)
    return ratios


def cv(values: list[float]) -> float:
    return float(np.std(values) / np.mean(values))


def ratio(args: argparse.Namespace) -> None:
    cfg = OverheadConfig(task="go2_joystick_flat", sim="mujoco", num_envs=args.ratio_num_envs, warmup=3,
                         steps=args.ratio_steps, threads=args.threads, rss_num_envs=0, torch_threads=0,
                         actions="pregenerated")
    print(f"ratio: go2_joystick_flat manager/direct throughput, N={cfg.num_envs}, {args.threads} threads, "
          f"{cfg.steps} measured steps, {args.rounds} rounds per condition", flush=True)
    cvs: dict[str, dict[str, float]] = {rule: {} for rule in RULES}
    for condition in CONDITIONS:
        print(f"  {condition}: {load()}", flush=True)
        with host(condition, args):
            ratios = ratio_rounds(cfg, args.rounds)
        for rule, values in ratios.items():
            cvs[rule][condition] = cv(values)
    print(f"  {load()}", flush=True)
    for rule, by_condition in cvs.items():
        quiet, busy = by_condition["as it is"], by_condition["neighbour"]
        print(f"  {rule:<8} CV of the ratio: as it is {quiet:6.3f}, neighbour {busy:6.3f}, "
              f"neighbour / as it is {busy / quiet:6.2f} (target <= 2)", flush=True)


def smoke_sweep(results: Path) -> tuple[int, str, float]:
    """One ``shasweep run sweeps/smoke.yaml``: exit code, verdict line, wall seconds."""
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "orchestrator.cli", "run", "sweeps/smoke.yaml",
                           f"results={results}", "--no-progress"], cwd=REPO, capture_output=True, text=True,
                          check=False)
    wall = time.perf_counter() - started
    lines = (proc.stdout.strip() or proc.stderr.strip() or "(no output)").splitlines()
    return proc.returncode, lines[-1], wall


def smoke(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="busy_host-") as tmp:
        results = Path(tmp) / "results"
        code, verdict, wall = smoke_sweep(results)
        print(f"smoke: first sweep (worktree and Numba cache; not counted) {wall:6.1f} s, exit {code}: "
              f"{verdict}", flush=True)
        print(f"  neighbour: {load()}", flush=True)
        outcomes = []
        with host("neighbour", args, Path(tmp) / "neighbour.jsonl"):
            for i in range(args.smoke_runs):
                code, verdict, wall = smoke_sweep(results)
                outcomes.append((code, wall))
                print(f"    sweep {i + 1}/{args.smoke_runs}: {wall:6.1f} s, exit {code}: {verdict}  "
                      f"({load()})", flush=True)
    walls = [wall for _, wall in outcomes]
    print(f"  PASS (exit 0) in {sum(code == 0 for code, _ in outcomes)} of {len(outcomes)}; wall median "
          f"{np.median(walls):.1f} s, max {max(walls):.1f} s", flush=True)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parts", default=",".join(PARTS))
    parser.add_argument("--seed", type=int, default=0, help="the neighbour's seed")
    parser.add_argument("--neighbour-options", type=shlex.split, default=[],
                        help="more options for benchmarks/neighbour.py, one string")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--kernel-cases", default="g1_motion_tracking:4096,go2_joystick_flat:256",
                        help="task:num_envs pairs of the kernels part")
    parser.add_argument("--steps", type=int, default=60,
                        help="measured steps per arm and condition (kernels)")
    parser.add_argument("--ratio-num-envs", type=int, default=2048)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--ratio-steps", type=int, default=20)
    parser.add_argument("--smoke-runs", type=int, default=10)
    args = parser.parse_args()
    unknown = set(args.parts.split(",")) - set(PARTS)
    if unknown:
        parser.error(f"unknown parts {sorted(unknown)}; valid: {', '.join(PARTS)}")
    return args


def main() -> None:
    args = parse_args()
    parts = {"kernels": kernels, "ratio": ratio, "smoke": smoke}
    for name in args.parts.split(","):
        parts[name](args)


if __name__ == "__main__":
    main()
