"""Physics backends behind one protocol (``base.py``), chosen by ``--sim``, and the reset staging rows.
May import numpy, the physics engines and ``envruntime.kernels`` only."""

from __future__ import annotations

import importlib
import os
from pathlib import Path

from envruntime.backends.base import Backend, ModelInfo

__all__ = ["Backend", "ModelInfo", "SIMS", "default_threads", "make_backend"]

# sim name -> "module:class"; modules are imported on demand so a missing optional engine
# (mujoco-warp) only matters to the runs that ask for it.
SIMS: dict[str, str] = {
    "mujoco": "envruntime.backends.mujoco_backend:MujocoBackend",
    "motrix": "envruntime.backends.motrix.backend:MotrixBackend",
    "mjwarp": "envruntime.backends.mjwarp_backend:MjwarpBackend",
}


def default_threads() -> int:
    """The CPUs in this process's affinity mask."""
    return len(os.sched_getaffinity(0))


def make_backend(sim: str, xml_path: str | Path, num_envs: int, threads: int | None = None) -> Backend:
    """Build backend ``sim`` over ``num_envs`` copies of the MJCF at ``xml_path``."""
    if sim not in SIMS:
        raise ValueError(f"unknown sim {sim!r}; valid: {', '.join(SIMS)}")
    module_name, class_name = SIMS[sim].split(":")
    cls = getattr(importlib.import_module(module_name), class_name)
    return cls(Path(xml_path), num_envs=num_envs, threads=threads or default_threads())
