"""g1_walk_flat: Unitree G1 (29 DoF) velocity tracking on flat ground (terms: ``params``'s docstring).
Owns its params, manager_cfg, direct variant and this factory; may import envs, managers, kernels,
backends, robots and tasks.common."""

from __future__ import annotations

from envruntime.backends.base import Backend
from envruntime.envs.manager_based import ManagerBasedEnv
from envruntime.robots.g1 import G1_XML
from envruntime.tasks.g1_walk_flat.direct import G1WalkDirectEnv
from envruntime.tasks.g1_walk_flat.manager_cfg import manager_cfg
from envruntime.tasks.g1_walk_flat.params import G1WalkCfg

XML_PATH = G1_XML

__all__ = ["XML_PATH", "G1WalkCfg", "make_direct_env", "make_manager_env"]


def make_manager_env(backend: Backend, cfg: G1WalkCfg | None = None) -> ManagerBasedEnv:
    """The manager-based variant, one env per row of ``backend``."""
    return ManagerBasedEnv(manager_cfg(cfg or G1WalkCfg()), backend)


def make_direct_env(backend: Backend, cfg: G1WalkCfg | None = None) -> G1WalkDirectEnv:
    """The hand-fused variant, one env per row of ``backend``."""
    return G1WalkDirectEnv(cfg or G1WalkCfg(), backend)
