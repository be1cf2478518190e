"""Motion-tracking observation kernels.

Each quantity has an ``*_into`` row function writing env ``r``'s values into ``out[start:]``
(the fused direct kernel calls these) and a kernel over a row subset filling ``out`` (k, dim),
row ``i`` for env ``rows[i]``. Robot poses come from world-frame ``framepos``/``framequat``
sensor columns of ``sd``; the reference from the clip at each env's ``time_step``.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from envruntime.kernels.motion_math import quat_mul, rotation_first_two_columns
from envruntime.kernels.parallel import rows_kernel
from envruntime.kernels.scalar import rotate_inverse


@njit(cache=True)
def _write6(out: np.ndarray, start: int, v: tuple[float, float, float, float, float, float]) -> None:
    for c in range(6):
        out[start + c] = v[c]


@njit(cache=True)
def ref_anchor_pos_b_into(
    sd: np.ndarray,
    pos_col: int,
    quat_col: int,
    time_step: np.ndarray,
    body_pos: np.ndarray,
    anchor: int,
    r: int,
    out: np.ndarray,
    start: int,
) -> None:
    """(3) the reference anchor's position in the robot anchor's frame."""
    t = time_step[r]
    x, y, z = rotate_inverse(
        sd[r, quat_col], sd[r, quat_col + 1], sd[r, quat_col + 2], sd[r, quat_col + 3],
        body_pos[t, anchor, 0] - sd[r, pos_col],
        body_pos[t, anchor, 1] - sd[r, pos_col + 1],
        body_pos[t, anchor, 2] - sd[r, pos_col + 2],
    )  # fmt: skip
    out[start] = x
    out[start + 1] = y
    out[start + 2] = z


@njit(cache=True)
def ref_anchor_ori_b_into(
    sd: np.ndarray,
    quat_col: int,
    time_step: np.ndarray,
    body_quat: np.ndarray,
    anchor: int,
    r: int,
    out: np.ndarray,
    start: int,
) -> None:
    """(6) the reference anchor's orientation in the robot anchor's frame, as the first two
    columns of ``R(conj(q_robot) * q_ref)``."""
    t = time_step[r]
    q = quat_mul(
        sd[r, quat_col], -sd[r, quat_col + 1], -sd[r, quat_col + 2], -sd[r, quat_col + 3],
        body_quat[t, anchor, 0], body_quat[t, anchor, 1], body_quat[t, anchor, 2], body_quat[t, anchor, 3],
    )  # fmt: skip
    _write6(out, start, rotation_first_two_columns(q[0], q[1], q[2], q[3]))


@njit(cache=True)
def body_pos_b_into(
    sd: np.ndarray, anchor_pos_col: int, anchor_quat_col: int, pos_cols: np.ndarray, r: int,
    out: np.ndarray, start: int,
) -> None:  # fmt: skip
    """(3 B) each robot body's position in the robot anchor's frame."""
    qw, qx, qy, qz = (
        sd[r, anchor_quat_col], sd[r, anchor_quat_col + 1], sd[r, anchor_quat_col + 2],
        sd[r, anchor_quat_col + 3],
    )  # fmt: skip
    for b in range(pos_cols.shape[0]):
        c = pos_cols[b]
        x, y, z = rotate_inverse(
            qw, qx, qy, qz,
            sd[r, c] - sd[r, anchor_pos_col],
            sd[r, c + 1] - sd[r, anchor_pos_col + 1],
            sd[r, c + 2] - sd[r, anchor_pos_col + 2],
        )  # fmt: skip
        out[start + 3 * b] = x
        out[start + 3 * b + 1] = y
        out[start + 3 * b + 2] = z


@njit(cache=True)
def body_ori_b_into(
    sd: np.ndarray, anchor_quat_col: int, quat_cols: np.ndarray, r: int, out: np.ndarray, start: int
) -> None:
    """(6 B) each robot body's orientation in the robot anchor's frame (first two columns)."""
    aw, ax, ay, az = (
        sd[r, anchor_quat_col], -sd[r, anchor_quat_col + 1], -sd[r, anchor_quat_col + 2],
        -sd[r, anchor_quat_col + 3],
    )  # fmt: skip
    for b in range(quat_cols.shape[0]):
        c = quat_cols[b]
        q = quat_mul(aw, ax, ay, az, sd[r, c], sd[r, c + 1], sd[r, c + 2], sd[r, c + 3])
        _write6(out, start + 6 * b, rotation_first_two_columns(q[0], q[1], q[2], q[3]))


@rows_kernel
def ref_anchor_pos_b(
    rows: np.ndarray, sd: np.ndarray, pos_col: int, quat_col: int, time_step: np.ndarray,
    body_pos: np.ndarray, anchor: int, out: np.ndarray,
) -> None:  # fmt: skip
    for i in prange(rows.shape[0]):
        ref_anchor_pos_b_into(sd, pos_col, quat_col, time_step, body_pos, anchor, rows[i], out[i], 0)


@rows_kernel
def ref_anchor_ori_b(
    rows: np.ndarray, sd: np.ndarray, quat_col: int, time_step: np.ndarray, body_quat: np.ndarray,
    anchor: int, out: np.ndarray,
) -> None:  # fmt: skip
    for i in prange(rows.shape[0]):
        ref_anchor_ori_b_into(sd, quat_col, time_step, body_quat, anchor, rows[i], out[i], 0)


@rows_kernel
def body_pos_b(
    rows: np.ndarray, sd: np.ndarray, anchor_pos_col: int, anchor_quat_col: int, pos_cols: np.ndarray,
    out: np.ndarray,
) -> None:  # fmt: skip
    for i in prange(rows.shape[0]):
        body_pos_b_into(sd, anchor_pos_col, anchor_quat_col, pos_cols, rows[i], out[i], 0)


@rows_kernel
def body_ori_b(
    rows: np.ndarray, sd: np.ndarray, anchor_quat_col: int, quat_cols: np.ndarray, out: np.ndarray
) -> None:
    for i in prange(rows.shape[0]):
        body_ori_b_into(sd, anchor_quat_col, quat_cols, rows[i], out[i], 0)
