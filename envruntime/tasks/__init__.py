"""Task registry: ``make_env(task, sim, variant, num_envs)`` builds a ``VecEnv`` from a task package's
``make_manager_env``/``make_direct_env`` and ``XML_PATH``. Tasks may import envs, managers, kernels,
backends, robots and ``tasks.common``; their direct variants never reach manager code."""

from __future__ import annotations

import importlib

from envruntime.backends import make_backend
from envruntime.envs.vecenv import VecEnv

TASKS: tuple[str, ...] = ("go2_joystick_flat", "g1_walk_flat", "g1_motion_tracking")
VARIANTS: tuple[str, ...] = ("manager", "direct")


def make_env(task: str, sim: str, variant: str, num_envs: int, threads: int | None = None) -> VecEnv:
    """Build ``variant`` of ``task`` on backend ``sim`` with ``num_envs`` envs."""
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}; valid: {', '.join(TASKS)}")
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; valid: {', '.join(VARIANTS)}")
    module = importlib.import_module(f"envruntime.tasks.{task}")
    backend = make_backend(sim, module.XML_PATH, num_envs=num_envs, threads=threads)
    factory = module.make_manager_env if variant == "manager" else module.make_direct_env
    return factory(backend)
