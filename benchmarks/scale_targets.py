"""Issue 16's scale targets that ``seven_case_overhead.py`` does not cover, one part at a time.

    python benchmarks/scale_targets.py [--parts scaling,actor,bytes] [--num-envs 4096] [--warmup 3]
        [--steps 20] [--rounds 3] [--threads-list 1,2] [--task g1_motion_tracking] [--sim mujoco]
        [--devices cpu,cuda]

* ``scaling``: the manager collector (``envruntime.bench`` subprocesses, pregenerated actions) at
  each ``--threads`` of ``--threads-list``, ``--rounds`` interleaved rounds; median
  ``update_state_ms`` and ``physics_ms`` per run and the median over rounds of the ratio of
  ``update_state_ms`` to the first count's in the same round (targets: 2 threads <= 0.7 x 1 thread here,
  16 threads <= 0.25 x 1 on a 16-core host).
* ``actor``: the FlashSAC actor's ``policy_ms`` (transfers and synchronise included) on each of
  ``--devices``; a device torch cannot use is reported as not measured.
* ``bytes``: bytes copied per collector step, counted, not timed: the replay's ``bytes_written``
  and the env's gather of done rows (manager variant; the direct variant computes them in place),
  over ``--steps`` steps of both variants with rows ending, against the copy list before issue 16
  (per observation group four full-width copies: the env's ``final_obs``, the replay's staging,
  staging to ring, ``final_obs`` to ring; plus the same done-row gather and transition fields).
  Target: >= 40 % fewer.

Other processes share the machine: read ratios measured within one run, not absolute times.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import replace

import numpy as np
import torch
from runtime_overhead import OverheadConfig, run_collector

from envruntime.collect.collector import make_collector
from envruntime.tasks import make_env

PARTS: tuple[str, ...] = ("scaling", "actor", "bytes")
FLOAT32 = 4


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def scaling(cfg: OverheadConfig, threads_list: list[int], rounds: int) -> None:
    """``rounds`` interleaved rounds of every thread count (a disturbed run moves one round, not the
    answer); per round the ratio to the first count, then the median ratio over the rounds."""
    print(f"update_state scaling: {cfg.task} manager on {cfg.sim}, N={cfg.num_envs}, pregenerated actions, "
          f"{cfg.steps} measured steps, {rounds} interleaved rounds; {load()}")
    ratios: dict[int, list[float]] = {threads: [] for threads in threads_list}
    for round_ in range(rounds):
        base = None
        for threads in threads_list:
            run = run_collector(replace(cfg, threads=threads, actions="pregenerated"), "manager",
                                cfg.num_envs, cfg.steps)
            update, physics = run.medians_ms["update_state_ms"], run.medians_ms["physics_ms"]
            base = base or update
            ratios[threads].append(update / base)
            print(f"  round {round_} threads {threads:3d}: update_state_ms {update:8.2f}  physics_ms "
                  f"{physics:8.2f}  update_state / first {update / base:6.3f}", flush=True)
    for threads, values in ratios.items():
        print(f"  threads {threads:3d}: median update_state / {threads_list[0]} threads over {rounds} rounds "
              f"{np.median(values):6.3f} (rounds {', '.join(f'{v:.3f}' for v in values)}); {load()}")


def actor(cfg: OverheadConfig, devices: list[str]) -> None:
    print(f"actor on each device: flashsac, {cfg.task} direct on {cfg.sim}, N={cfg.num_envs}; {load()}")
    for device in devices:
        if device == "cuda" and not torch.cuda.is_available():
            print("  cuda: not measured (torch sees no CUDA device)")
            continue
        run = run_collector(replace(cfg, algo="flashsac", device=device, actions="actor"), "direct",
                            cfg.num_envs, cfg.steps)
        print(f"  {device:5s}: policy_ms {run.medians_ms['policy_ms']:8.2f}  collector_step_ms "
              f"{run.medians_ms['collector_step_ms']:8.2f}", flush=True)


def copied_bytes(cfg: OverheadConfig, variant: str) -> tuple[float, float, int]:
    """(before, after) mean bytes copied per step over ``cfg.steps`` collector steps, and the rows
    that ended; episodes are cut short so that rows end."""
    env = make_env(cfg.task, cfg.sim, variant, cfg.num_envs, cfg.threads)
    try:
        collector = make_collector(env, "sac", 2, actions="pregenerated", seed=cfg.seed)
        collector.reset(cfg.seed)
        row_ids = np.arange(cfg.num_envs)
        env.episode_length[:] = env.max_episode_length - 1 - row_ids % cfg.steps  # row r ends at r % steps
        row_bytes = FLOAT32 * sum(env.obs_dims.values())
        transition_bytes = FLOAT32 * (env.action_dim + 3)  # action, reward, terminated, truncated
        before = after = 0
        ended = 0
        for _ in range(cfg.steps):
            start = collector.replay.bytes_written
            k = collector.step().resets
            gather = k * row_bytes if variant == "manager" else 0
            after += collector.replay.bytes_written - start + gather
            n = cfg.num_envs
            before += 4 * n * row_bytes + gather + n * transition_bytes
            ended += k
        return before / cfg.steps, after / cfg.steps, ended
    finally:
        env.close()


def copies(cfg: OverheadConfig) -> None:
    print(f"bytes copied per collector step (counted): {cfg.task} on {cfg.sim}, N={cfg.num_envs}, "
          f"{cfg.steps} steps")
    for variant in ("manager", "direct"):
        before, after, ended = copied_bytes(cfg, variant)
        print(f"  {variant:7s}: before {before / 1e6:9.3f} MB  after {after / 1e6:9.3f} MB  "
              f"reduction {100 * (1 - after / before):5.1f} %  ({ended} rows ended)", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parts", type=lambda t: t.split(","), default=list(PARTS))
    parser.add_argument("--task", default="g1_motion_tracking")
    parser.add_argument("--sim", default="mujoco")
    parser.add_argument("--num-envs", type=int, default=4096)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds of the scaling part")
    parser.add_argument("--threads-list", type=lambda t: [int(x) for x in t.split(",")], default=[1, 2])
    parser.add_argument("--threads", type=int, default=2, help="threads of the actor and bytes parts")
    parser.add_argument("--devices", type=lambda t: t.split(","), default=["cpu", "cuda"])
    args = parser.parse_args()
    unknown = sorted(set(args.parts) - set(PARTS))
    if unknown:
        parser.error(f"--parts: unknown {', '.join(unknown)}; valid: {', '.join(PARTS)}")
    if min(args.num_envs, args.steps, args.threads, args.rounds, *args.threads_list) < 1 or args.warmup < 0:
        parser.error("--num-envs, --steps, --rounds and thread counts must be >= 1; --warmup >= 0")
    cfg = OverheadConfig(task=args.task, sim=args.sim, num_envs=args.num_envs, warmup=args.warmup,
                         steps=args.steps, threads=args.threads, rss_num_envs=0, torch_threads=0)
    parts = {"scaling": lambda: scaling(cfg, args.threads_list, args.rounds),
             "actor": lambda: actor(cfg, args.devices), "bytes": lambda: copies(cfg)}
    for part in args.parts:
        parts[part]()


if __name__ == "__main__":
    main()
