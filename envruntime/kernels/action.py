"""Action kernels: policy actions to joint-position targets."""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from envruntime.kernels.parallel import rows_kernel
from envruntime.kernels.scalar import clamp


@njit(cache=True)
def joint_position_target(a: float, clip: float, scale: float, offset: float, lo: float, hi: float) -> float:
    """``clamp(clamp(a, -clip, clip) * scale + offset, lo, hi)``: one actuator's target."""
    return clamp(clamp(np.float64(a), -clip, clip) * scale + offset, lo, hi)


@rows_kernel
def joint_position_targets(
    action: np.ndarray, clip: float, scale: float, offset: np.ndarray, ctrl_lo: np.ndarray,
    ctrl_hi: np.ndarray, ctrl: np.ndarray,
) -> None:  # fmt: skip
    """``ctrl = joint_position_target(a)`` per actuator."""
    for r in prange(action.shape[0]):
        for k in range(action.shape[1]):
            ctrl[r, k] = joint_position_target(action[r, k], clip, scale, offset[k], ctrl_lo[k], ctrl_hi[k])


@rows_kernel
def record_action_and_targets(
    action_in: np.ndarray, action: np.ndarray, prev_action: np.ndarray, clip: float, scale: float,
    offset: np.ndarray, ctrl_lo: np.ndarray, ctrl_hi: np.ndarray, ctrl: np.ndarray,
) -> None:  # fmt: skip
    """Shift the action history (``prev_action := action``, ``action := action_in``) and compute
    the joint targets of the new action, one pass (the direct variants' action step)."""
    for r in prange(action.shape[0]):
        for k in range(action.shape[1]):
            prev_action[r, k] = action[r, k]
            action[r, k] = action_in[r, k]
            ctrl[r, k] = joint_position_target(action[r, k], clip, scale, offset[k], ctrl_lo[k], ctrl_hi[k])
