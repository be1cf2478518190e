"""Termination kernels: one flag per env into ``out`` (N,) bool, and their combination."""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from envruntime.kernels.parallel import rows_kernel
from envruntime.kernels.scalar import projected_gravity


@rows_kernel
def time_out(episode_length: np.ndarray, max_length: int, out: np.ndarray) -> None:
    """The episode reached ``max_length`` control steps."""
    for r in prange(out.shape[0]):
        out[r] = episode_length[r] >= max_length


@njit(cache=True)
def tilt_exceeds_row(sd: np.ndarray, quat_col: int, cos_limit: float, r: int) -> bool:
    """The body's z axis is tilted from vertical by more than ``acos(cos_limit)``."""
    _, _, gz = projected_gravity(
        sd[r, quat_col], sd[r, quat_col + 1], sd[r, quat_col + 2], sd[r, quat_col + 3]
    )
    return -gz < cos_limit


@rows_kernel
def tilt_exceeds(sd: np.ndarray, quat_col: int, cos_limit: float, out: np.ndarray) -> None:
    for r in prange(out.shape[0]):
        out[r] = tilt_exceeds_row(sd, quat_col, cos_limit, r)


@rows_kernel
def combine(
    flags: np.ndarray, is_time_out: np.ndarray, terminated: np.ndarray, truncated: np.ndarray
) -> None:
    """OR the term flags (N, T) into ``terminated`` (non-time-out terms) and ``truncated``
    (time-out terms, only where not terminated: a terminal state wins)."""
    for r in prange(flags.shape[0]):
        term = False
        trunc = False
        for k in range(flags.shape[1]):
            if flags[r, k]:
                if is_time_out[k]:
                    trunc = True
                else:
                    term = True
        terminated[r] = term
        truncated[r] = trunc and not term
