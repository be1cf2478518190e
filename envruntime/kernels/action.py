"""Action kernel: policy actions to joint-position targets."""

from __future__ import annotations

import numpy as np
from numba import njit

from envruntime.kernels.scalar import clamp


@njit(cache=True)
def joint_position_targets(
    action: np.ndarray,
    clip: float,
    scale: float,
    offset: np.ndarray,
    ctrl_lo: np.ndarray,
    ctrl_hi: np.ndarray,
    ctrl: np.ndarray,
) -> None:
    """``ctrl = clamp(clamp(a, -clip, clip) * scale + offset, ctrl_lo, ctrl_hi)``, per actuator."""
    for r in range(action.shape[0]):
        for k in range(action.shape[1]):
            a = clamp(np.float64(action[r, k]), -clip, clip)
            ctrl[r, k] = clamp(a * scale + offset[k], ctrl_lo[k], ctrl_hi[k])
