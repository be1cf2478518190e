"""Reference-state initialisation: the staged state of reset rows taken from the motion clip at
each row's start frame, with uniform noise."""

from __future__ import annotations

import numpy as np
from numba import prange

from envruntime.kernels.motion_math import quat_mul
from envruntime.kernels.parallel import rows_kernel
from envruntime.kernels.reset import ROOT_DRAWS, quat_from_euler
from envruntime.kernels.scalar import clamp, rotate_inverse, uniform


@rows_kernel
def stage_reference_state(
    u: np.ndarray,
    rows: np.ndarray,
    time_step: np.ndarray,
    root: int,
    body_pos: np.ndarray,
    body_quat: np.ndarray,
    body_lin_vel: np.ndarray,
    body_ang_vel: np.ndarray,
    joint_pos: np.ndarray,
    joint_vel: np.ndarray,
    qpos_adr: np.ndarray,
    dof_adr: np.ndarray,
    noise_lo: np.ndarray,
    noise_hi: np.ndarray,
    joint_lo: np.ndarray,
    joint_hi: np.ndarray,
    qpos: np.ndarray,
    qvel: np.ndarray,
) -> None:
    """Write the clip's state at frame ``time_step[rows[i]]`` into staged row ``i``.

    Root (clip body ``root``, the free-joint body): position + (x, y, z) noise; orientation
    ``q_euler(roll, pitch, yaw noise) * q_clip``; world linear velocity + noise; world angular
    velocity + noise, stored in the body frame of the new orientation (MuJoCo's free-joint
    convention). Joints: clip angle + noise, limited to [joint_lo, joint_hi]; clip velocity.

    ``u`` is (k, 12 + J) in [0, 1): the 12 root draws in the order of ``ROOT_DRAWS``, then one
    per joint. ``noise_lo``/``noise_hi`` are (13,): those 12 ranges, then the joint range.
    """
    nj = qpos_adr.shape[0]
    for i in prange(rows.shape[0]):
        t = time_step[rows[i]]
        for a in range(3):
            qpos[i, a] = body_pos[t, root, a] + uniform(noise_lo[a], noise_hi[a], u[i, a])
        dw, dx, dy, dz = quat_from_euler(
            uniform(noise_lo[3], noise_hi[3], u[i, 3]),
            uniform(noise_lo[4], noise_hi[4], u[i, 4]),
            uniform(noise_lo[5], noise_hi[5], u[i, 5]),
        )
        qw, qx, qy, qz = quat_mul(
            dw, dx, dy, dz, body_quat[t, root, 0], body_quat[t, root, 1], body_quat[t, root, 2],
            body_quat[t, root, 3],
        )  # fmt: skip
        qpos[i, 3] = qw
        qpos[i, 4] = qx
        qpos[i, 5] = qy
        qpos[i, 6] = qz
        for a in range(3):
            qvel[i, a] = body_lin_vel[t, root, a] + uniform(noise_lo[6 + a], noise_hi[6 + a], u[i, 6 + a])
        wx, wy, wz = rotate_inverse(
            qw, qx, qy, qz,
            body_ang_vel[t, root, 0] + uniform(noise_lo[9], noise_hi[9], u[i, 9]),
            body_ang_vel[t, root, 1] + uniform(noise_lo[10], noise_hi[10], u[i, 10]),
            body_ang_vel[t, root, 2] + uniform(noise_lo[11], noise_hi[11], u[i, 11]),
        )  # fmt: skip
        qvel[i, 3] = wx
        qvel[i, 4] = wy
        qvel[i, 5] = wz
        for j in range(nj):
            offset = uniform(noise_lo[12], noise_hi[12], u[i, ROOT_DRAWS + j])
            qpos[i, qpos_adr[j]] = clamp(joint_pos[t, j] + offset, joint_lo[j], joint_hi[j])
            qvel[i, dof_adr[j]] = joint_vel[t, j]
