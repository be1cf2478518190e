"""Action term funcs: joint-position targets around the default pose."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from envruntime.kernels.action import joint_position_targets


@dataclass
class _JointPosition:
    clip: float
    scale: float
    offset: np.ndarray
    ctrl_lo: np.ndarray
    ctrl_hi: np.ndarray
    dim: int

    def __call__(self, action: np.ndarray, ctrl: np.ndarray) -> None:
        joint_position_targets(action, self.clip, self.scale, self.offset, self.ctrl_lo, self.ctrl_hi, ctrl)


def joint_position(env: Any, scale: float, clip: float = np.inf) -> _JointPosition:
    """Every actuator's target = default joint position + ``scale`` * action clipped to
    [-clip, clip], limited to the actuator's ctrl range. Actuators must drive joints."""
    info = env.backend.info
    if np.any(info.actuator_joint < 0):
        raise ValueError("joint_position needs every actuator to drive a hinge/slide joint")
    offset = env.default_qpos[info.joint_qpos_adr[info.actuator_joint]]
    return _JointPosition(
        float(clip), float(scale), offset, info.ctrl_range[:, 0].copy(), info.ctrl_range[:, 1].copy(), info.nu
    )
