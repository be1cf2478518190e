"""How close the collector gets to raw physics, and what the managers cost.

    python benchmarks/runtime_overhead.py [--num-envs 4096] [--warmup 5] [--steps 30]
        [--task go2_joystick_flat] [--sim mujoco] [--threads 0] [--torch-threads 0] [--rss-num-envs 8192]
        [--actions actor|pregenerated]

Measures in one run and prints:

* the raw physics limit: the backend's ``step`` alone on the task's model (same substeps =
  decimation, same threads), replaying the controls a direct env sent under random actions
  from the state it was in, in env-steps/s;
* the direct and manager collector throughput (``python -m envruntime.bench`` subprocesses,
  SAC actor, or with ``--actions pregenerated`` the seeds' bank of random actions and no actor,
  read from their ``summary`` records);
* the ratios against the targets: direct >= 0.85 x physics, manager/direct >= 0.95 (as measured,
  and at equal physics cost: see ``equal_physics_ratio``), manager
  ``update_state_ms`` <= 15 % of ``physics_ms`` (computed from median step times, which resist
  interference from other processes; wall-clock rates are printed beside them), and each
  collector's own physics share (its ``physics_ms`` over its ``collector_step_ms``);
* the peak RSS of a manager collector at ``--rss-num-envs`` (its own ``getrusage``; target < 4 GB).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from time import perf_counter

import numpy as np

from envruntime.backends import default_threads, make_backend
from envruntime.bench.cli import DEFAULT_TORCH_THREADS, TORCH_THREADS_ENV
from envruntime.envs.kernel_threads import POLICY_ENV
from envruntime.tasks import make_env

REPO = Path(__file__).resolve().parent.parent
DIRECT_OVER_PHYSICS_TARGET = 0.85
MANAGER_OVER_DIRECT_TARGET = 0.95
UPDATE_STATE_SHARE_TARGET = 0.15
RSS_TARGET_MB = 4096.0


@dataclass(frozen=True)
class OverheadConfig:
    task: str
    sim: str
    num_envs: int
    warmup: int
    steps: int
    threads: int
    rss_num_envs: int  # 0 skips the RSS run
    torch_threads: int  # 0: the bench's default (DEFAULT_TORCH_THREADS)
    algo: str = "sac"  # the collectors' actor
    seed: int = 0
    actions: str = "actor"  # the bench's --actions: actor | pregenerated
    device: str = "cpu"  # the bench's --device for the actor
    kernel_policy: str = ""  # ENVRUNTIME_KERNEL_THREADS of the bench; "": its default (adaptive)


def task_decimation(task: str, sim: str, threads: int) -> int:
    """Physics substeps per control step of ``task`` (read from a one-env instance)."""
    env = make_env(task, sim, "manager", 1, threads)
    try:
        return int(env.decimation)
    finally:
        env.close()


@dataclass(frozen=True)
class Rate:
    """Env-steps/s of one measurement: over its wall time, and from its median step time."""

    wall: float
    median: float


def physics_limit(cfg: OverheadConfig, decimation: int) -> Rate:
    """Env-steps/s of the backend's ``step`` alone, on the states and controls a collector meets.

    The direct env runs ``warmup + steps`` steps of uniformly random actions (what an untrained
    actor sends) while the controls of the last ``steps`` are recorded; the backend is then put
    back into the state those steps started from and replays the recorded controls, timed, with
    no env logic. (Holding a fixed pose would measure another contact load than the collector's.)
    """
    module = importlib.import_module(f"envruntime.tasks.{cfg.task}")
    backend = make_backend(cfg.sim, module.XML_PATH, cfg.num_envs, cfg.threads)
    try:
        env = module.make_direct_env(backend)
        controls: list[np.ndarray] = []
        step_backend = backend.step
        backend.step = lambda ctrl, substeps: (controls.append(ctrl.copy()), step_backend(ctrl, substeps))
        rng = np.random.default_rng(cfg.seed)
        env.reset(cfg.seed)
        for i in range(cfg.warmup + cfg.steps):
            if i == cfg.warmup:
                start = backend.qpos.copy(), backend.qvel.copy()
                controls.clear()
            env.step(rng.uniform(-1.0, 1.0, (cfg.num_envs, env.action_dim)).astype(np.float32))
        del backend.step  # the class's step again
        backend.reset(np.arange(cfg.num_envs), *start)
        step_s = []
        for ctrl in controls:
            begin = perf_counter()
            backend.step(ctrl, decimation)
            step_s.append(perf_counter() - begin)
    finally:
        backend.close()
    return Rate(wall=cfg.num_envs * cfg.steps / sum(step_s),
                median=cfg.num_envs / float(np.median(step_s)))


@dataclass(frozen=True)
class CollectorRun:
    """One bench subprocess: its summary and per-phase medians over the measured steps."""

    summary: dict
    medians_ms: dict[str, float]

    def rate(self, num_envs: int) -> Rate:
        return Rate(wall=self.summary["throughput"],
                    median=num_envs * 1e3 / self.medians_ms["collector_step_ms"])


def run_collector(cfg: OverheadConfig, variant: str, num_envs: int, measure: int) -> CollectorRun:
    """Run the bench CLI as a subprocess (``cfg.algo``'s actor) and read its stream."""
    with tempfile.TemporaryDirectory() as tmp:
        stream = Path(tmp) / "run.ndjson"
        argv = [sys.executable, "-m", "envruntime.bench", "--algo", cfg.algo, "--task", cfg.task,
                "--sim", cfg.sim, "--variant", variant, "--num-envs", str(num_envs),
                "--warmup", str(cfg.warmup), "--measure", str(measure), "--threads", str(cfg.threads),
                "--actions", cfg.actions, "--device", cfg.device, "--stream", str(stream)]
        env = dict(os.environ)
        if cfg.torch_threads:
            env[TORCH_THREADS_ENV] = str(cfg.torch_threads)
        if cfg.kernel_policy:
            env[POLICY_ENV] = cfg.kernel_policy
        # cwd=REPO puts this checkout first on sys.path for ``-m``
        proc = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, check=False)
        records = [json.loads(line) for line in stream.read_text().splitlines()] if stream.exists() else []
    if proc.returncode != 0 or not records or records[-1]["kind"] != "summary":
        raise RuntimeError(f"bench {variant} N={num_envs} failed (exit {proc.returncode}): "
                           f"{records[-1] if records else proc.stderr[-2000:]}")
    measured = [r["phases"] for r in records if r["kind"] == "step" and not r["warmup"]]
    medians = {phase: float(np.median([p[phase] for p in measured])) for phase in measured[0]}
    return CollectorRun(summary=records[-1], medians_ms=medians)


def equal_physics_ratio(direct_ms: dict[str, float], manager_ms: dict[str, float]) -> float:
    """Manager/direct throughput had both collectors met the same physics cost (the mean of theirs).

    The variants step the same model with the same substeps, so their physics is the same work;
    between two processes on a shared host it still varies with load. This ratio keeps what the
    variants really differ in (everything in a collector step but physics) and drops that noise.
    """
    physics = (direct_ms["physics_ms"] + manager_ms["physics_ms"]) / 2.0
    rest = {name: ms["collector_step_ms"] - ms["physics_ms"]
            for name, ms in (("direct", direct_ms), ("manager", manager_ms))}
    return (physics + rest["direct"]) / (physics + rest["manager"])


def verdict(ok: bool) -> str:
    return "meets target" if ok else "MISSES target"


def print_ratio(name: str, value: float, target: float, at_least: bool) -> None:
    ok = value >= target if at_least else value <= target
    print(f"  {name:34s} {value:6.3f}  ({'>=' if at_least else '<='} {target}: {verdict(ok)})")


def report(cfg: OverheadConfig) -> None:
    decimation = task_decimation(cfg.task, cfg.sim, cfg.threads)
    physics = physics_limit(cfg, decimation)
    runs = {variant: run_collector(cfg, variant, cfg.num_envs, cfg.steps)
            for variant in ("direct", "manager")}
    rates = {variant: run.rate(cfg.num_envs) for variant, run in runs.items()}
    print(f"{cfg.task} on {cfg.sim}, N={cfg.num_envs}, {cfg.threads} threads, {cfg.actions} actions "
          f"(torch {cfg.torch_threads or DEFAULT_TORCH_THREADS}), decimation {decimation}, "
          f"{cfg.steps} measured steps after {cfg.warmup} warm-up")
    print("  env-steps/s                  wall-clock   from median step")
    print(f"  raw physics limit          {physics.wall:12.0f} {physics.median:12.0f}")
    for variant, rate in rates.items():
        print(f"  {variant:8s} collector         {rate.wall:12.0f} {rate.median:12.0f}")
    print("  median ms per step: " + "; ".join(
        f"{variant} " + " ".join(f"{k}={run.medians_ms[k]:.1f}" for k in (
            "policy_ms", "env_step_ms", "physics_ms", "update_state_ms", "reset_done_ms", "replay_ms"))
        for variant, run in runs.items()))
    manager_ms = runs["manager"].medians_ms
    print("  ratios (from median steps):")
    print_ratio("direct / physics limit", rates["direct"].median / physics.median,
                DIRECT_OVER_PHYSICS_TARGET, at_least=True)
    print_ratio("manager / direct", rates["manager"].median / rates["direct"].median,
                MANAGER_OVER_DIRECT_TARGET, at_least=True)
    print_ratio("manager / direct at equal physics",
                equal_physics_ratio(runs["direct"].medians_ms, manager_ms),
                MANAGER_OVER_DIRECT_TARGET, at_least=True)
    print_ratio("manager update_state / physics_ms", manager_ms["update_state_ms"] / manager_ms["physics_ms"],
                UPDATE_STATE_SHARE_TARGET, at_least=False)
    share = {variant: run.medians_ms["physics_ms"] / run.medians_ms["collector_step_ms"]
             for variant, run in runs.items()}
    print(f"  physics_ms / collector_step_ms (the collector's own physics share): direct "
          f"{share['direct']:.3f}, manager {share['manager']:.3f}")
    breakdown = {k.removeprefix("update_state."): round(v, 2) for k, v in manager_ms.items()
                 if k.startswith("update_state.")}
    print(f"  manager update_state breakdown (median ms): {breakdown}")
    if cfg.rss_num_envs:
        rss = run_collector(cfg, "manager", cfg.rss_num_envs, 2).summary["peak_rss_mb"]
        print(f"  peak RSS, manager collector N={cfg.rss_num_envs}: {rss:.0f} MiB  "
              f"(< {RSS_TARGET_MB:.0f}: {verdict(rss < RSS_TARGET_MB)})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", default="go2_joystick_flat")
    parser.add_argument("--sim", default="mujoco")
    parser.add_argument("--num-envs", type=int, default=4096)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--threads", type=int, default=0, help="0: every CPU of the affinity mask")
    parser.add_argument("--rss-num-envs", type=int, default=8192, help="0 skips the RSS run")
    parser.add_argument("--actions", default="actor", choices=("actor", "pregenerated"),
                        help="the collectors' --actions (pregenerated: no actor in the loop)")
    parser.add_argument("--torch-threads", type=int, default=0,
                        help=f"sets {TORCH_THREADS_ENV} for the collectors; 0: the bench default")
    args = parser.parse_args()
    if min(args.num_envs, args.steps) < 1 or min(args.warmup, args.threads, args.rss_num_envs,
                                                  args.torch_threads) < 0:
        parser.error("--num-envs and --steps must be >= 1; the other counts >= 0")
    report(OverheadConfig(task=args.task, sim=args.sim, num_envs=args.num_envs, warmup=args.warmup,
                          steps=args.steps, threads=args.threads or default_threads(),
                          rss_num_envs=args.rss_num_envs, torch_threads=args.torch_threads,
                          actions=args.actions))


if __name__ == "__main__":
    main()
