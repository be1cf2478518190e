"""Velocity-command kernels: resampling of rows and the per-step heading/standing update."""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from envruntime.kernels.parallel import rows_kernel
from envruntime.kernels.scalar import clamp, uniform, wrap_to_pi, yaw_of

RESAMPLE_DRAWS = 7  # columns of ``u`` that resample_velocity_command consumes per row


@rows_kernel
def resample_velocity_command(
    u: np.ndarray,
    rows: np.ndarray,
    ranges: np.ndarray,
    rel_heading: float,
    rel_standing: float,
    command: np.ndarray,
    heading: np.ndarray,
    is_heading: np.ndarray,
    is_standing: np.ndarray,
    time_left: np.ndarray,
) -> None:
    """New commands for ``rows`` from ``u`` (k, 7).

    ``ranges`` is (5, 2): lin_vel_x, lin_vel_y, ang_vel_z, heading, resampling time. Columns of
    ``u``: time, vx, vy, wz, heading, heading-env draw, standing-env draw.
    """
    for i in prange(rows.shape[0]):
        r = rows[i]
        time_left[r] = uniform(ranges[4, 0], ranges[4, 1], u[i, 0])
        command[r, 0] = uniform(ranges[0, 0], ranges[0, 1], u[i, 1])
        command[r, 1] = uniform(ranges[1, 0], ranges[1, 1], u[i, 2])
        command[r, 2] = uniform(ranges[2, 0], ranges[2, 1], u[i, 3])
        heading[r] = uniform(ranges[3, 0], ranges[3, 1], u[i, 4])
        is_heading[r] = u[i, 5] < rel_heading
        is_standing[r] = u[i, 6] < rel_standing


@njit(cache=True)
def update_velocity_command_row(
    sd: np.ndarray,
    quat_col: int,
    stiffness: float,
    ang_lo: float,
    ang_hi: float,
    command: np.ndarray,
    heading: np.ndarray,
    is_heading: np.ndarray,
    is_standing: np.ndarray,
    r: int,
) -> None:
    """Heading env ``r`` steers ``wz`` toward its target heading; a standing env gets zeros."""
    if is_heading[r]:
        yaw = yaw_of(sd[r, quat_col], sd[r, quat_col + 1], sd[r, quat_col + 2], sd[r, quat_col + 3])
        command[r, 2] = clamp(stiffness * wrap_to_pi(heading[r] - yaw), ang_lo, ang_hi)
    if is_standing[r]:
        command[r, 0] = 0.0
        command[r, 1] = 0.0
        command[r, 2] = 0.0


@rows_kernel
def update_velocity_command(
    sd: np.ndarray,
    quat_col: int,
    stiffness: float,
    ang_lo: float,
    ang_hi: float,
    command: np.ndarray,
    heading: np.ndarray,
    is_heading: np.ndarray,
    is_standing: np.ndarray,
) -> None:
    """``update_velocity_command_row`` for every env."""
    for r in prange(command.shape[0]):
        update_velocity_command_row(
            sd, quat_col, stiffness, ang_lo, ang_hi, command, heading, is_heading, is_standing, r
        )
