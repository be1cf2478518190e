"""Motion-tracking reward kernels (BeyondMimic's exp kernels).

Each ``*_error_row`` is the squared error of env ``r`` (averaged over bodies where there are
several), which the fused direct kernel calls too; each array kernel fills ``out`` (N,) with
``exp(-error / std^2)``.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from envruntime.kernels.motion_math import quat_error_angle
from envruntime.kernels.parallel import rows_kernel
from envruntime.kernels.scalar import exp_kernel


@njit(cache=True)
def anchor_pos_error_row(
    sd: np.ndarray, pos_col: int, time_step: np.ndarray, body_pos: np.ndarray, anchor: int, r: int
) -> float:
    """``|p_ref_anchor - p_robot_anchor|^2`` in the world (not re-anchored)."""
    t = time_step[r]
    total = 0.0
    for a in range(3):
        d = body_pos[t, anchor, a] - sd[r, pos_col + a]
        total += d * d
    return total


@njit(cache=True)
def anchor_ori_error_row(
    sd: np.ndarray, quat_col: int, time_step: np.ndarray, body_quat: np.ndarray, anchor: int, r: int
) -> float:
    """Squared angle between the reference and robot anchor orientations."""
    t = time_step[r]
    angle = quat_error_angle(
        body_quat[t, anchor, 0], body_quat[t, anchor, 1], body_quat[t, anchor, 2], body_quat[t, anchor, 3],
        sd[r, quat_col], sd[r, quat_col + 1], sd[r, quat_col + 2], sd[r, quat_col + 3],
    )  # fmt: skip
    return angle * angle


@njit(cache=True)
def body_pos_error_row(sd: np.ndarray, pos_cols: np.ndarray, pos_rel: np.ndarray, r: int) -> float:
    """Mean over bodies of ``|p_rel - p_robot|^2`` (re-anchored reference, ``pos_rel`` (N, B, 3))."""
    total = 0.0
    for b in range(pos_cols.shape[0]):
        for a in range(3):
            d = pos_rel[r, b, a] - sd[r, pos_cols[b] + a]
            total += d * d
    return total / pos_cols.shape[0]


@njit(cache=True)
def body_ori_error_row(sd: np.ndarray, quat_cols: np.ndarray, quat_rel: np.ndarray, r: int) -> float:
    """Mean over bodies of the squared angle between re-anchored reference and robot bodies."""
    total = 0.0
    for b in range(quat_cols.shape[0]):
        c = quat_cols[b]
        angle = quat_error_angle(
            quat_rel[r, b, 0], quat_rel[r, b, 1], quat_rel[r, b, 2], quat_rel[r, b, 3],
            sd[r, c], sd[r, c + 1], sd[r, c + 2], sd[r, c + 3],
        )  # fmt: skip
        total += angle * angle
    return total / quat_cols.shape[0]


@njit(cache=True)
def body_vel_error_row(
    sd: np.ndarray, vel_cols: np.ndarray, time_step: np.ndarray, ref_vel: np.ndarray, r: int
) -> float:
    """Mean over bodies of ``|v_ref - v_robot|^2`` of world-frame (linear or angular) velocities."""
    t = time_step[r]
    total = 0.0
    for b in range(vel_cols.shape[0]):
        for a in range(3):
            d = ref_vel[t, b, a] - sd[r, vel_cols[b] + a]
            total += d * d
    return total / vel_cols.shape[0]


@rows_kernel
def anchor_tracking(
    sd: np.ndarray, col: int, time_step: np.ndarray, ref: np.ndarray, anchor: int, orientation: bool,
    std: float, out: np.ndarray,
) -> None:  # fmt: skip
    """Exp kernel of the anchor's position error (``col`` its position column, ``ref`` the clip's
    body positions) or, with ``orientation``, of its orientation error (quat column, quats)."""
    for r in prange(out.shape[0]):
        if orientation:
            error = anchor_ori_error_row(sd, col, time_step, ref, anchor, r)
        else:
            error = anchor_pos_error_row(sd, col, time_step, ref, anchor, r)
        out[r] = exp_kernel(error, std)


@rows_kernel
def body_pose_tracking(
    sd: np.ndarray, cols: np.ndarray, rel: np.ndarray, orientation: bool, std: float, out: np.ndarray
) -> None:
    """Exp kernel of the bodies' position error to the re-anchored reference (``cols`` their
    position columns, ``rel`` ``body_pos_rel``) or, with ``orientation``, their orientation error
    (quat columns, ``body_quat_rel``)."""
    for r in prange(out.shape[0]):
        if orientation:
            error = body_ori_error_row(sd, cols, rel, r)
        else:
            error = body_pos_error_row(sd, cols, rel, r)
        out[r] = exp_kernel(error, std)


@rows_kernel
def body_vel_tracking(
    sd: np.ndarray, vel_cols: np.ndarray, time_step: np.ndarray, ref_vel: np.ndarray, std: float,
    out: np.ndarray,
) -> None:  # fmt: skip
    for r in prange(out.shape[0]):
        out[r] = exp_kernel(body_vel_error_row(sd, vel_cols, time_step, ref_vel, r), std)
