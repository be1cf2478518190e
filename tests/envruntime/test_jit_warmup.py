"""reset(seed) compiles every Numba specialisation a later step can need, so no JIT compile lands
in a measured step (a lone done row used to compile the observation kernels' one-row path).

Each check runs in a fresh interpreter: Numba dispatchers keep every signature compiled earlier in
the process, so in the pytest process any earlier test that reset a lone row would already have
compiled the one-row path and the check would pass even without the warm-up in reset(seed)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from envruntime.tasks import TASKS

REPO = Path(__file__).resolve().parents[2]
CHECK = """
import importlib, pkgutil, sys
import numpy as np
import envruntime.kernels, envruntime.managers.mdp
from envruntime.tasks import make_env

def compiled_signatures():
    counts = {}
    for package in (envruntime.kernels, envruntime.managers.mdp):
        for info in pkgutil.iter_modules(package.__path__):
            module = importlib.import_module(f"{package.__name__}.{info.name}")
            counts |= {f"{module.__name__}.{name}": len(obj.signatures)
                       for name, obj in vars(module).items() if hasattr(obj, "signatures")}
    return counts

env = make_env(sys.argv[1], "mujoco", "manager", num_envs=8, threads=1)
try:
    env.reset(seed=0)
    before = compiled_signatures()
    env.observation_manager.compute(np.array([3]))  # the observation rebuild of one done row
    env.observation_manager.compute(np.array([2, 5]))
    after = compiled_signatures()
    new = {k: v for k, v in after.items() if before.get(k) != v}
finally:
    env.close()
print(new)
sys.exit(1 if new else 0)
"""


@pytest.mark.parametrize("task", TASKS)
def test_a_lone_done_row_compiles_nothing_new(task):
    proc = subprocess.run([sys.executable, "-c", CHECK, task], cwd=REPO, capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 0, f"compiled after reset(seed): {proc.stdout}{proc.stderr[-2000:]}"
