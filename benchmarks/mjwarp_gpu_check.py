"""MJWarp on a GPU, in one go: where the time of a step goes, and what the collector gets.

    python benchmarks/mjwarp_gpu_check.py [--num-envs 8192] [--warmup 20] [--measure 100]
        [--backend-steps 50] [--substeps 4] [--tasks go2_joystick_flat,g1_walk_flat]
        [--variants manager] [--case-timeout 300] [--allow-cpu]

Prints, per task:

* backend alone (``MjwarpBackend.step`` with the ``home`` controls plus noise): mean
  ``h2d_ms`` (control upload), ``physics_ms`` (substeps + velocity-stage pass, synchronised),
  ``d2h_ms`` (host-cache refresh), the D2H share of physics + D2H, and env-steps/s;
* the SAC collector (``python -m envruntime.bench --sim mjwarp`` subprocess, its ``summary``
  record): ``physics_ms``, ``d2h_ms``, ``apply_action_ms``, ``update_state_ms``,
  ``env_step_ms``, ``collector_step_ms`` and throughput.

A task whose module or MJCF is missing, or a run that fails, is reported by name and the script
goes on; the exit code is 1 if any part failed, 2 for bad arguments or no CUDA device (unless
``--allow-cpu``, for a tiny smoke run on warp's CPU device). The first run compiles warp's
kernels (minutes; cached under ~/.cache/warp). Run the CPU-vs-GPU correctness test first:
``python -m pytest tests/envruntime/test_mjwarp_backend.py -q`` (it runs on the CUDA device when
there is one, graphs included).
"""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from time import perf_counter

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # run from a checkout without installing it

from envruntime.backends.mjwarp_backend import MjwarpBackend, import_mjwarp  # noqa: E402

COLLECTOR_PHASES = ("physics_ms", "d2h_ms", "apply_action_ms", "update_state_ms", "env_step_ms",
                    "collector_step_ms")
EXIT_PART_FAILED = 1
EXIT_INVALID = 2


@dataclass(frozen=True)
class CheckConfig:
    num_envs: int
    warmup: int
    measure: int
    backend_steps: int
    substeps: int
    tasks: tuple[str, ...]
    variants: tuple[str, ...]
    case_timeout: int
    allow_cpu: bool


def parse_args(argv: list[str]) -> CheckConfig:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--num-envs", type=int, default=8192)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--measure", type=int, default=100)
    parser.add_argument("--backend-steps", type=int, default=50)
    parser.add_argument("--substeps", type=int, default=4)
    parser.add_argument("--tasks", default="go2_joystick_flat,g1_walk_flat")
    parser.add_argument("--variants", default="manager")
    parser.add_argument("--case-timeout", type=int, default=300, help="seconds per collector run")
    parser.add_argument("--allow-cpu", action="store_true", help="run on warp's CPU device (smoke)")
    args = parser.parse_args(argv)
    for name in ("num_envs", "measure", "backend_steps", "substeps", "case_timeout"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1")
    return CheckConfig(args.num_envs, args.warmup, args.measure, args.backend_steps, args.substeps,
                       tuple(filter(None, args.tasks.split(","))),
                       tuple(filter(None, args.variants.split(","))), args.case_timeout, args.allow_cpu)


def task_xml(task: str) -> Path:
    """The MJCF a task loads, from its module's ``XML_PATH``."""
    return Path(importlib.import_module(f"envruntime.tasks.{task}").XML_PATH)


def backend_split(xml_path: Path, cfg: CheckConfig) -> dict[str, float]:
    """Mean per-step transfer and physics times of the bare backend, and its env-steps/s."""
    backend = MjwarpBackend(xml_path, num_envs=cfg.num_envs, threads=1)
    try:
        qpos, qvel = backend.info.keyframes["home"]
        backend.reset(np.arange(cfg.num_envs), np.tile(qpos, (cfg.num_envs, 1)),
                      np.tile(qvel, (cfg.num_envs, 1)))
        rng = np.random.default_rng(0)
        home_ctrl = np.tile(qpos[7:7 + backend.info.nu], (cfg.num_envs, 1))
        ctrls = [home_ctrl + 0.1 * rng.standard_normal(home_ctrl.shape) for _ in range(4)]
        backend.step(ctrls[0], cfg.substeps)  # captures the CUDA graph
        sums = dict.fromkeys(("h2d_ms", "physics_ms", "d2h_ms"), 0.0)
        start = perf_counter()
        for i in range(cfg.backend_steps):
            backend.step(ctrls[i % len(ctrls)], cfg.substeps)
            for key in sums:
                sums[key] += backend.timings[key]
        wall = perf_counter() - start
    finally:
        backend.close()
    means = {key: total / cfg.backend_steps for key, total in sums.items()}
    means["d2h_share"] = means["d2h_ms"] / (means["physics_ms"] + means["d2h_ms"])
    means["env_steps_per_s"] = cfg.num_envs * cfg.backend_steps / wall
    return means


def collector_summary(task: str, variant: str, cfg: CheckConfig) -> dict:
    """Run the bench on mjwarp and return its summary record (or raise with its error)."""
    with tempfile.TemporaryDirectory() as tmp:
        stream = Path(tmp) / "stream.ndjson"
        argv = [sys.executable, "-m", "envruntime.bench", "--algo", "sac", "--task", task,
                "--sim", "mjwarp", "--variant", variant, "--num-envs", str(cfg.num_envs),
                "--warmup", str(cfg.warmup), "--measure", str(cfg.measure), "--stream", str(stream)]
        proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=cfg.case_timeout)
        records = [json.loads(line) for line in stream.read_text().splitlines()] if stream.exists() else []
    for record in records:
        if record["kind"] == "summary":
            return record
        if record["kind"] == "error":
            raise RuntimeError(f"{record['type']}: {record['message']}")
    raise RuntimeError(f"bench exited {proc.returncode} without a summary: {proc.stderr[-2000:]}")


def main(argv: list[str] | None = None) -> int:
    cfg = parse_args(sys.argv[1:] if argv is None else argv)
    wp, _ = import_mjwarp()
    wp.init()
    device = wp.get_device()
    print(f"warp device: {device} ({device.name}); num_envs={cfg.num_envs}")
    if not device.is_cuda and not cfg.allow_cpu:
        print("no CUDA device: this check needs a GPU (--allow-cpu for a CPU smoke run)", file=sys.stderr)
        return EXIT_INVALID
    failed = False
    for task in cfg.tasks:
        try:
            split = backend_split(task_xml(task), cfg)
        except Exception as exc:  # report and go on to the next part
            print(f"[{task}] backend: FAILED {type(exc).__name__}: {exc}")
            failed = True
        else:
            print(f"[{task}] backend: h2d {split['h2d_ms']:.3f} ms  physics {split['physics_ms']:.3f} ms  "
                  f"d2h {split['d2h_ms']:.3f} ms  (d2h share {split['d2h_share']:.1%})  "
                  f"{split['env_steps_per_s']:,.0f} env-steps/s")
        for variant in cfg.variants:
            try:
                summary = collector_summary(task, variant, cfg)
            except Exception as exc:
                print(f"[{task}/{variant}] collector: FAILED {type(exc).__name__}: {exc}")
                failed = True
                continue
            means = summary["phase_means_ms"]
            phases = "  ".join(f"{p.removesuffix('_ms')} {means.get(p, float('nan')):.3f}"
                               for p in COLLECTOR_PHASES)
            print(f"[{task}/{variant}] collector (ms): {phases}  "
                  f"throughput {summary['throughput']:,.0f} env-steps/s")
    return EXIT_PART_FAILED if failed else 0


if __name__ == "__main__":
    sys.exit(main())
