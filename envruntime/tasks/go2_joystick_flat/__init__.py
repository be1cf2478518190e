"""go2_joystick_flat: Unitree Go2 velocity tracking on flat ground (terms: ``params``'s docstring).
Owns its params, manager_cfg, direct variant and this factory; may import envs, managers, kernels,
backends, robots and tasks.common."""

from __future__ import annotations

from envruntime.backends.base import Backend
from envruntime.envs.manager_based import ManagerBasedEnv
from envruntime.robots.go2 import GO2_SCENE_XML
from envruntime.tasks.go2_joystick_flat.direct import Go2JoystickDirectEnv
from envruntime.tasks.go2_joystick_flat.manager_cfg import manager_cfg
from envruntime.tasks.go2_joystick_flat.params import Go2JoystickCfg

XML_PATH = GO2_SCENE_XML

__all__ = ["XML_PATH", "Go2JoystickCfg", "make_direct_env", "make_manager_env"]


def make_manager_env(backend: Backend, cfg: Go2JoystickCfg | None = None) -> ManagerBasedEnv:
    """The manager-based variant, one env per row of ``backend``."""
    return ManagerBasedEnv(manager_cfg(cfg or Go2JoystickCfg()), backend)


def make_direct_env(backend: Backend, cfg: Go2JoystickCfg | None = None) -> Go2JoystickDirectEnv:
    """The hand-fused variant, one env per row of ``backend``."""
    return Go2JoystickDirectEnv(cfg or Go2JoystickCfg(), backend)
