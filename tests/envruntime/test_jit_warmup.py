"""reset(seed) compiles every Numba specialisation a later step can need, so no JIT compile lands
in a measured step (a lone done row used to compile the observation kernels' one-row path)."""

from __future__ import annotations

import importlib
import pkgutil

import numpy as np
import pytest

import envruntime.kernels
import envruntime.managers.mdp
from envruntime.tasks import TASKS, make_env


def compiled_signatures() -> dict[str, int]:
    """Number of compiled signatures of every Numba dispatcher in the kernel and term modules."""
    counts = {}
    for package in (envruntime.kernels, envruntime.managers.mdp):
        for info in pkgutil.iter_modules(package.__path__):
            module = importlib.import_module(f"{package.__name__}.{info.name}")
            counts |= {f"{module.__name__}.{name}": len(obj.signatures)
                       for name, obj in vars(module).items() if hasattr(obj, "signatures")}
    return counts


@pytest.mark.parametrize("task", TASKS)
def test_a_lone_done_row_compiles_nothing_new(task):
    env = make_env(task, "mujoco", "manager", num_envs=8, threads=1)
    try:
        env.reset(seed=0)
        before = compiled_signatures()
        env.observation_manager.compute(np.array([3]))  # the observation rebuild of one done row
        env.observation_manager.compute(np.array([2, 5]))
        after = compiled_signatures()
        assert {k: v for k, v in after.items() if before.get(k) != v} == {}
    finally:
        env.close()
