"""g1_motion_tracking: Unitree G1 whole-body motion tracking (terms: ``params``'s docstring).
Owns its params, manager_cfg and terms (mdp, motion_command), the clip, the direct variant and this
factory; may import envs, managers, kernels, backends, robots and tasks.common."""

from __future__ import annotations

from envruntime.backends.base import Backend
from envruntime.robots.g1 import G1_XML
from envruntime.tasks.g1_motion_tracking.direct import G1MotionTrackingDirectEnv
from envruntime.tasks.g1_motion_tracking.manager_cfg import COMMAND, manager_cfg
from envruntime.tasks.g1_motion_tracking.manager_env import MotionTrackingEnv
from envruntime.tasks.g1_motion_tracking.params import G1MotionTrackingCfg

XML_PATH = G1_XML

__all__ = ["XML_PATH", "G1MotionTrackingCfg", "make_direct_env", "make_manager_env"]


def make_manager_env(backend: Backend, cfg: G1MotionTrackingCfg | None = None) -> MotionTrackingEnv:
    """The manager-based variant, one env per row of ``backend``."""
    return MotionTrackingEnv(manager_cfg(cfg or G1MotionTrackingCfg()), backend, COMMAND)


def make_direct_env(backend: Backend, cfg: G1MotionTrackingCfg | None = None) -> G1MotionTrackingDirectEnv:
    """The hand-fused variant, one env per row of ``backend``."""
    return G1MotionTrackingDirectEnv(cfg or G1MotionTrackingCfg(), backend)
