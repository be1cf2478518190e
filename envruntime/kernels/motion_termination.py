"""Motion-tracking termination kernels (BeyondMimic's tracking-error limits).

Each ``*_error_row`` is the error of env ``r`` that the fused direct kernel compares too; each
array kernel fills ``out`` (N,) bool with ``error > threshold``.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from envruntime.kernels.parallel import rows_kernel
from envruntime.kernels.scalar import projected_gravity


@njit(cache=True)
def anchor_height_error_row(
    sd: np.ndarray, pos_col: int, time_step: np.ndarray, body_pos: np.ndarray, anchor: int, r: int
) -> float:
    """``|z_ref_anchor - z_robot_anchor|``."""
    return abs(body_pos[time_step[r], anchor, 2] - sd[r, pos_col + 2])


@njit(cache=True)
def anchor_gravity_error_row(
    sd: np.ndarray, quat_col: int, time_step: np.ndarray, body_quat: np.ndarray, anchor: int, r: int
) -> float:
    """``|g_z_ref - g_z_robot|`` of gravity projected into each anchor's frame (0 when both lean
    alike, 2 when one is upside down)."""
    t = time_step[r]
    _, _, ref_gz = projected_gravity(
        body_quat[t, anchor, 0], body_quat[t, anchor, 1], body_quat[t, anchor, 2], body_quat[t, anchor, 3]
    )
    _, _, gz = projected_gravity(
        sd[r, quat_col], sd[r, quat_col + 1], sd[r, quat_col + 2], sd[r, quat_col + 3]
    )
    return abs(ref_gz - gz)


@njit(cache=True)
def body_height_error_row(
    sd: np.ndarray, pos_cols: np.ndarray, bodies: np.ndarray, pos_rel: np.ndarray, r: int
) -> float:
    """Largest ``|z_rel - z_robot|`` over ``bodies`` (indices into ``pos_cols``/``pos_rel``)."""
    worst = 0.0
    for i in range(bodies.shape[0]):
        b = bodies[i]
        worst = max(worst, abs(pos_rel[r, b, 2] - sd[r, pos_cols[b] + 2]))
    return worst


@rows_kernel
def anchor_error_exceeds(
    sd: np.ndarray, col: int, time_step: np.ndarray, ref: np.ndarray, anchor: int, gravity: bool,
    threshold: float, out: np.ndarray,
) -> None:  # fmt: skip
    """The anchor's height error (``col`` its position column, ``ref`` the clip's body positions)
    or, with ``gravity``, its gravity error (quat column, quats) exceeds ``threshold``."""
    for r in prange(out.shape[0]):
        if gravity:
            error = anchor_gravity_error_row(sd, col, time_step, ref, anchor, r)
        else:
            error = anchor_height_error_row(sd, col, time_step, ref, anchor, r)
        out[r] = error > threshold


@rows_kernel
def body_height_exceeds(
    sd: np.ndarray, pos_cols: np.ndarray, bodies: np.ndarray, pos_rel: np.ndarray, threshold: float,
    out: np.ndarray,
) -> None:  # fmt: skip
    for r in prange(out.shape[0]):
        out[r] = body_height_error_row(sd, pos_cols, bodies, pos_rel, r) > threshold
