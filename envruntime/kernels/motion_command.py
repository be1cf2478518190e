"""Motion-command kernels: the per-step reference update, its re-anchoring to the robot, and
the failure-weighted (adaptive) sampling of start frames.

The reference clip arrays are indexed by frame ``t``: ``body_pos`` (T, B, 3), ``body_quat``
(T, B, 4), ``joint_pos``/``joint_vel`` (T, J). ``time_step`` (N,) holds each env's frame.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from envruntime.kernels.motion_math import quat_mul, rotate, yaw_quat
from envruntime.kernels.parallel import rows_kernel


@njit(cache=True)
def advance_motion_row(
    time_step: np.ndarray, joint_pos: np.ndarray, joint_vel: np.ndarray, command: np.ndarray, r: int
) -> None:
    """Env ``r`` moves one frame on (the clip loops) and its command row becomes the reference
    joint positions, then joint velocities, of that frame."""
    t = time_step[r] + 1
    if t >= joint_pos.shape[0]:
        t = 0
    time_step[r] = t
    nj = joint_pos.shape[1]
    for j in range(nj):
        command[r, j] = joint_pos[t, j]
        command[r, nj + j] = joint_vel[t, j]


@rows_kernel
def advance_motion(
    time_step: np.ndarray, joint_pos: np.ndarray, joint_vel: np.ndarray, command: np.ndarray
) -> None:
    """``advance_motion_row`` for every env (the command's compute stage)."""
    for r in prange(time_step.shape[0]):
        advance_motion_row(time_step, joint_pos, joint_vel, command, r)


@njit(cache=True)
def relative_body_poses_row(
    time_step: np.ndarray,
    body_pos: np.ndarray,
    body_quat: np.ndarray,
    anchor: int,
    sd: np.ndarray,
    anchor_pos_col: int,
    anchor_quat_col: int,
    pos_rel: np.ndarray,
    quat_rel: np.ndarray,
    r: int,
) -> None:
    """The reference bodies of env ``r`` re-anchored on the robot (BeyondMimic's relative pose).

    The rotation ``yaw(q_robot_anchor * conj(q_ref_anchor))`` and the shift that puts the
    reference anchor at the robot anchor's x, y (keeping the reference anchor's height) are
    applied to every reference body: ``pos_rel[r, b]`` (B, 3), ``quat_rel[r, b]`` (B, 4).
    """
    t = time_step[r]
    mw, mx = body_quat[t, anchor, 0], body_quat[t, anchor, 1]
    my, mz = body_quat[t, anchor, 2], body_quat[t, anchor, 3]
    dw, dx, dy, dz = quat_mul(
        sd[r, anchor_quat_col],
        sd[r, anchor_quat_col + 1],
        sd[r, anchor_quat_col + 2],
        sd[r, anchor_quat_col + 3],
        mw,
        -mx,
        -my,
        -mz,
    )
    yw, yx, yy, yz = yaw_quat(dw, dx, dy, dz)
    ox, oy, oz = sd[r, anchor_pos_col], sd[r, anchor_pos_col + 1], body_pos[t, anchor, 2]
    for b in range(body_pos.shape[1]):
        qw, qx, qy, qz = quat_mul(
            yw, yx, yy, yz, body_quat[t, b, 0], body_quat[t, b, 1], body_quat[t, b, 2], body_quat[t, b, 3]
        )
        quat_rel[r, b, 0] = qw
        quat_rel[r, b, 1] = qx
        quat_rel[r, b, 2] = qy
        quat_rel[r, b, 3] = qz
        vx, vy, vz = rotate(
            yw,
            yx,
            yy,
            yz,
            body_pos[t, b, 0] - body_pos[t, anchor, 0],
            body_pos[t, b, 1] - body_pos[t, anchor, 1],
            body_pos[t, b, 2] - body_pos[t, anchor, 2],
        )
        pos_rel[r, b, 0] = ox + vx
        pos_rel[r, b, 1] = oy + vy
        pos_rel[r, b, 2] = oz + vz


@rows_kernel
def relative_body_poses(
    time_step: np.ndarray,
    body_pos: np.ndarray,
    body_quat: np.ndarray,
    anchor: int,
    sd: np.ndarray,
    anchor_pos_col: int,
    anchor_quat_col: int,
    pos_rel: np.ndarray,
    quat_rel: np.ndarray,
) -> None:
    """``relative_body_poses_row`` for every env (the command's post-compute stage)."""
    for r in prange(time_step.shape[0]):
        relative_body_poses_row(
            time_step, body_pos, body_quat, anchor, sd, anchor_pos_col, anchor_quat_col, pos_rel, quat_rel, r
        )


@njit(cache=True)
def record_failures(
    time_step: np.ndarray, rows: np.ndarray, failed: np.ndarray, num_frames: int, counts: np.ndarray
) -> None:
    """Add one to the time bin of each row of ``rows`` whose episode ``failed``; bin ``b`` of
    ``len(counts)`` covers frames ``[b T / bins, (b + 1) T / bins)``."""
    bins = counts.shape[0]
    for i in range(rows.shape[0]):
        r = rows[i]
        if failed[r]:
            counts[min(time_step[r] * bins // num_frames, bins - 1)] += 1.0


@njit(cache=True)
def decay_failure_counts(new_counts: np.ndarray, failure_rate: np.ndarray, alpha: float) -> None:
    """Exponential moving average ``rate = alpha * new + (1 - alpha) * rate``; ``new`` is zeroed."""
    for b in range(failure_rate.shape[0]):
        failure_rate[b] = alpha * new_counts[b] + (1.0 - alpha) * failure_rate[b]
        new_counts[b] = 0.0


@njit(cache=True)
def sampling_cdf(failure_rate: np.ndarray, uniform_ratio: float, kernel: np.ndarray, cdf: np.ndarray) -> None:
    """Cumulative start-bin probabilities: ``failure_rate + uniform_ratio / bins``, smoothed
    toward earlier bins by ``kernel`` (``p'[b] = sum_i kernel[i] p[min(b + i, bins - 1)]``,
    ``kernel`` summing to 1), normalised."""
    bins = failure_rate.shape[0]
    mix = uniform_ratio / bins
    total = 0.0
    for b in range(bins):
        p = 0.0
        for i in range(kernel.shape[0]):
            p += kernel[i] * (failure_rate[min(b + i, bins - 1)] + mix)
        total += p
        cdf[b] = total
    for b in range(bins):
        cdf[b] /= total


@rows_kernel
def sample_start_frames(
    u: np.ndarray, rows: np.ndarray, cdf: np.ndarray, num_frames: int, time_step: np.ndarray
) -> None:
    """Start frame of each row of ``rows``: a bin drawn from ``cdf`` with ``u[i, 0]``, then a
    uniform point of that bin with ``u[i, 1]``: ``floor((bin + u) / bins * (T - 1))``."""
    bins = cdf.shape[0]
    for i in prange(rows.shape[0]):
        b = 0
        while b < bins - 1 and u[i, 0] >= cdf[b]:
            b += 1
        time_step[rows[i]] = int((b + u[i, 1]) / bins * (num_frames - 1))
