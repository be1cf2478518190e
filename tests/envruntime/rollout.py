"""Writes every output of short rollouts of each task and variant (MuJoCo, 24 rows, rows ending) to
an ``.npz``: ``python tests/envruntime/rollout.py OUT.npz NUMBA_THREADS``. The kernel test runs it
once with serial kernels and once with parallel ones and compares the files bit for bit."""

from __future__ import annotations

import importlib
import sys

import numba
import numpy as np

from envruntime.backends.mujoco_backend import MujocoBackend
from envruntime.envs.kernel_threads import KernelThreads
from envruntime.envs.vecenv import dense_final_obs
from envruntime.kernels.parallel import threading_layer
from envruntime.tasks import TASKS, VARIANTS

N, STEPS = 24, 40
CFG_CLASSES = {"go2_joystick_flat": "Go2JoystickCfg", "g1_walk_flat": "G1WalkCfg",
               "g1_motion_tracking": "G1MotionTrackingCfg"}


def rollout(task: str, variant: str, arrays: dict[str, np.ndarray]) -> None:
    module = importlib.import_module(f"envruntime.tasks.{task}")
    cfg = getattr(module, CFG_CLASSES[task])(episode_length_s=0.3)  # time-outs, besides the falls
    factory = module.make_manager_env if variant == "manager" else module.make_direct_env
    env = factory(MujocoBackend(module.XML_PATH, num_envs=N, threads=1), cfg)
    env.kernel_threads = KernelThreads(numba.get_num_threads(), policy="fixed")  # every step on all of them
    rng = np.random.default_rng(7)
    amplitude = np.where(np.arange(N) % 2 == 0, 3.0, 0.3)[:, None]  # even rows act wildly and fall
    try:
        for group, obs in env.reset(seed=5).items():
            arrays[f"{task}/{variant}/first/{group}"] = obs.copy()
        for step in range(STEPS):
            action = (amplitude * rng.standard_normal((N, env.action_dim))).astype(np.float32)
            result = env.step(action)
            key = f"{task}/{variant}/{step}"
            arrays[f"{key}/reward"] = result.reward.copy()
            arrays[f"{key}/done_rows"] = result.done_rows.copy()
            for group, obs in result.obs.items():
                arrays[f"{key}/obs/{group}"] = obs.copy()
            for group, final in dense_final_obs(result).items():
                arrays[f"{key}/final/{group}"] = final
        arrays[f"{task}/{variant}/qpos"] = np.array(env.backend.qpos)
    finally:
        env.close()


def main(out: str, threads: int) -> None:
    numba.set_num_threads(threads)
    arrays: dict[str, np.ndarray] = {}
    for task in TASKS:
        for variant in VARIANTS:
            rollout(task, variant, arrays)
    arrays["layer"] = np.array(threading_layer())
    arrays["threads"] = np.array(numba.get_num_threads())
    np.savez(out, **arrays)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
