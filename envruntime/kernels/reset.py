"""Reset-state sampling kernels: map [0, 1) draws to new root and joint states of reset rows."""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from envruntime.kernels.motion_math import quat_mul
from envruntime.kernels.parallel import rows_kernel
from envruntime.kernels.scalar import clamp, uniform

ROOT_DRAWS = 12  # columns of ``u`` for the root: x, y, z, roll, pitch, yaw, vx, vy, vz, wx, wy, wz


@njit(cache=True)
def quat_from_euler(roll: float, pitch: float, yaw: float) -> tuple[float, float, float, float]:
    """Rotation ``Rz(yaw) Ry(pitch) Rx(roll)`` as a quaternion."""
    cr, sr = math.cos(0.5 * roll), math.sin(0.5 * roll)
    cp, sp = math.cos(0.5 * pitch), math.sin(0.5 * pitch)
    cy, sy = math.cos(0.5 * yaw), math.sin(0.5 * yaw)
    return (
        cy * cp * cr + sy * sp * sr,
        cy * cp * sr - sy * sp * cr,
        cy * sp * cr + sy * cp * sr,
        sy * cp * cr - cy * sp * sr,
    )


@rows_kernel
def sample_root_state(
    u: np.ndarray,
    pose_lo: np.ndarray,
    pose_hi: np.ndarray,
    vel_lo: np.ndarray,
    vel_hi: np.ndarray,
    qpos: np.ndarray,
    qvel: np.ndarray,
) -> None:
    """Offset the free-joint pose of staged rows and set their root velocity.

    ``u`` is (k, 12): columns 0-5 draw (x, y, z, roll, pitch, yaw) offsets in [pose_lo, pose_hi)
    (the rotation is applied on top of the staged orientation), 6-11 the root qvel.
    """
    for i in prange(u.shape[0]):
        for a in range(3):
            qpos[i, a] += uniform(pose_lo[a], pose_hi[a], u[i, a])
        dw, dx, dy, dz = quat_from_euler(
            uniform(pose_lo[3], pose_hi[3], u[i, 3]),
            uniform(pose_lo[4], pose_hi[4], u[i, 4]),
            uniform(pose_lo[5], pose_hi[5], u[i, 5]),
        )
        w, x, y, z = quat_mul(dw, dx, dy, dz, qpos[i, 3], qpos[i, 4], qpos[i, 5], qpos[i, 6])
        qpos[i, 3] = w
        qpos[i, 4] = x
        qpos[i, 5] = y
        qpos[i, 6] = z
        for a in range(6):
            qvel[i, a] = uniform(vel_lo[a], vel_hi[a], u[i, 6 + a])


@rows_kernel
def sample_joint_offsets(
    u: np.ndarray,
    qpos_adr: np.ndarray,
    offset_lo: float,
    offset_hi: float,
    joint_lo: np.ndarray,
    joint_hi: np.ndarray,
    qpos: np.ndarray,
) -> None:
    """Add uniform offsets in [offset_lo, offset_hi) to the staged joint positions, kept within
    the joint range. ``u`` is (k, nj)."""
    for i in prange(u.shape[0]):
        for j in range(qpos_adr.shape[0]):
            a = qpos_adr[j]
            qpos[i, a] = clamp(qpos[i, a] + uniform(offset_lo, offset_hi, u[i, j]), joint_lo[j], joint_hi[j])
