"""Reward kernels. Each term has a row function (``*_row``: the value for env ``r``), which the
fused direct kernels call too, and an array kernel filling ``out`` (N,) with it. Weights are
applied by the caller (``weighted_sum``)."""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from envruntime.kernels.parallel import rows_kernel
from envruntime.kernels.scalar import exp_kernel, projected_gravity


@njit(cache=True)
def lin_vel_xy_tracking_row(command: np.ndarray, sd: np.ndarray, vel_col: int, std: float, r: int) -> float:
    """``exp(-|cmd_xy - v_xy|^2 / std^2)``, ``v`` the body-frame velocity at ``sd[r, vel_col]``."""
    ex = command[r, 0] - sd[r, vel_col]
    ey = command[r, 1] - sd[r, vel_col + 1]
    return exp_kernel(ex * ex + ey * ey, std)


@njit(cache=True)
def ang_vel_z_tracking_row(command: np.ndarray, sd: np.ndarray, gyro_col: int, std: float, r: int) -> float:
    """``exp(-(cmd_wz - w_z)^2 / std^2)``, ``w`` the gyro at ``sd[r, gyro_col]``."""
    e = command[r, 2] - sd[r, gyro_col + 2]
    return exp_kernel(e * e, std)


@njit(cache=True)
def upright_row(sd: np.ndarray, quat_col: int, std: float, r: int) -> float:
    """``exp(-|g_xy|^2 / std^2)`` of the projected gravity: 1 when level."""
    gx, gy, _ = projected_gravity(
        sd[r, quat_col], sd[r, quat_col + 1], sd[r, quat_col + 2], sd[r, quat_col + 3]
    )
    return exp_kernel(gx * gx + gy * gy, std)


@njit(cache=True)
def posture_row(qpos: np.ndarray, qpos_adr: np.ndarray, default: np.ndarray, std: float, r: int) -> float:
    """``exp(-sum_j (q_j - default_j)^2 / std^2)``."""
    total = 0.0
    for j in range(qpos_adr.shape[0]):
        d = qpos[r, qpos_adr[j]] - default[j]
        total += d * d
    return exp_kernel(total, std)


@njit(cache=True)
def action_rate_row(action: np.ndarray, prev_action: np.ndarray, r: int) -> float:
    """``sum_k (a_k - a_prev_k)^2``."""
    total = 0.0
    for k in range(action.shape[1]):
        d = np.float64(action[r, k]) - np.float64(prev_action[r, k])
        total += d * d
    return total


@njit(cache=True)
def joint_limits_row(
    qpos: np.ndarray, qpos_adr: np.ndarray, soft_lo: np.ndarray, soft_hi: np.ndarray, r: int
) -> float:
    """``sum_j`` of how far ``q_j`` lies outside [soft_lo_j, soft_hi_j]."""
    total = 0.0
    for j in range(qpos_adr.shape[0]):
        q = qpos[r, qpos_adr[j]]
        total += max(soft_lo[j] - q, 0.0) + max(q - soft_hi[j], 0.0)
    return total


@njit(cache=True)
def foot_clearance_row(
    sd: np.ndarray, z_cols: np.ndarray, vel_cols: np.ndarray, radius: float, target: float, r: int
) -> float:
    """``sum_f (h_f - target)^2 |v_xy_f|``: moving feet should swing at ``target`` height."""
    total = 0.0
    for f in range(z_cols.shape[0]):
        dh = sd[r, z_cols[f]] - radius - target
        vx = sd[r, vel_cols[f]]
        vy = sd[r, vel_cols[f] + 1]
        total += dh * dh * np.sqrt(vx * vx + vy * vy)
    return total


@njit(cache=True)
def foot_slip_row(
    sd: np.ndarray, vel_cols: np.ndarray, touch_cols: np.ndarray, threshold: float, r: int
) -> float:
    """``sum_f contact_f |v_xy_f|^2``: feet in contact (touch > threshold) should not slide."""
    total = 0.0
    for f in range(vel_cols.shape[0]):
        if sd[r, touch_cols[f]] > threshold:
            vx = sd[r, vel_cols[f]]
            vy = sd[r, vel_cols[f] + 1]
            total += vx * vx + vy * vy
    return total


@rows_kernel
def lin_vel_xy_tracking(
    command: np.ndarray, sd: np.ndarray, vel_col: int, std: float, out: np.ndarray
) -> None:
    for r in prange(out.shape[0]):
        out[r] = lin_vel_xy_tracking_row(command, sd, vel_col, std, r)


@rows_kernel
def ang_vel_z_tracking(
    command: np.ndarray, sd: np.ndarray, gyro_col: int, std: float, out: np.ndarray
) -> None:
    for r in prange(out.shape[0]):
        out[r] = ang_vel_z_tracking_row(command, sd, gyro_col, std, r)


@rows_kernel
def upright(sd: np.ndarray, quat_col: int, std: float, out: np.ndarray) -> None:
    for r in prange(out.shape[0]):
        out[r] = upright_row(sd, quat_col, std, r)


@rows_kernel
def posture(qpos: np.ndarray, qpos_adr: np.ndarray, default: np.ndarray, std: float, out: np.ndarray) -> None:
    for r in prange(out.shape[0]):
        out[r] = posture_row(qpos, qpos_adr, default, std, r)


@rows_kernel
def action_rate(action: np.ndarray, prev_action: np.ndarray, out: np.ndarray) -> None:
    for r in prange(out.shape[0]):
        out[r] = action_rate_row(action, prev_action, r)


@rows_kernel
def joint_limits(
    qpos: np.ndarray, qpos_adr: np.ndarray, soft_lo: np.ndarray, soft_hi: np.ndarray, out: np.ndarray
) -> None:
    for r in prange(out.shape[0]):
        out[r] = joint_limits_row(qpos, qpos_adr, soft_lo, soft_hi, r)


@rows_kernel
def foot_clearance(
    sd: np.ndarray, z_cols: np.ndarray, vel_cols: np.ndarray, radius: float, target: float, out: np.ndarray
) -> None:
    for r in prange(out.shape[0]):
        out[r] = foot_clearance_row(sd, z_cols, vel_cols, radius, target, r)


@rows_kernel
def foot_slip(
    sd: np.ndarray, vel_cols: np.ndarray, touch_cols: np.ndarray, threshold: float, out: np.ndarray
) -> None:
    for r in prange(out.shape[0]):
        out[r] = foot_slip_row(sd, vel_cols, touch_cols, threshold, r)


@rows_kernel
def weighted_sum(raw: np.ndarray, weights: np.ndarray, out: np.ndarray) -> None:
    """``out[r] = sum_k raw[r, k] * weights[k]``, summed in term order."""
    for r in prange(raw.shape[0]):
        total = 0.0
        for k in range(raw.shape[1]):
            total += raw[r, k] * weights[k]
        out[r] = total
