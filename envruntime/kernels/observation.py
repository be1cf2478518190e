"""Observation kernels over a row subset: output row ``i`` belongs to env ``rows[i]``."""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from envruntime.kernels.parallel import rows_kernel
from envruntime.kernels.scalar import observe, projected_gravity


@rows_kernel
def gather_columns(
    src: np.ndarray, rows: np.ndarray, cols: np.ndarray, offset: np.ndarray, out: np.ndarray
) -> None:
    """``out[i, k] = src[rows[i], cols[k]] - offset[k]``."""
    for i in prange(rows.shape[0]):
        r = rows[i]
        for k in range(cols.shape[0]):
            out[i, k] = src[r, cols[k]] - offset[k]


@rows_kernel
def projected_gravity_rows(src: np.ndarray, rows: np.ndarray, quat_col: int, out: np.ndarray) -> None:
    """Gravity in the body frame of the quaternion at ``src[:, quat_col:quat_col + 4]``."""
    for i in prange(rows.shape[0]):
        r = rows[i]
        gx, gy, gz = projected_gravity(
            src[r, quat_col], src[r, quat_col + 1], src[r, quat_col + 2], src[r, quat_col + 3]
        )
        out[i, 0] = gx
        out[i, 1] = gy
        out[i, 2] = gz


@rows_kernel
def threshold_flags(
    src: np.ndarray, rows: np.ndarray, cols: np.ndarray, threshold: float, out: np.ndarray
) -> None:
    """``out[i, k] = 1.0 if src[rows[i], cols[k]] > threshold else 0.0`` (e.g. foot contacts)."""
    for i in prange(rows.shape[0]):
        r = rows[i]
        for k in range(cols.shape[0]):
            out[i, k] = 1.0 if src[r, cols[k]] > threshold else 0.0


@rows_kernel
def postprocess_rows(
    raw: np.ndarray,
    rows: np.ndarray,
    noise_key: np.uint64,
    noise_amp: np.ndarray,
    clip_lo: np.ndarray,
    clip_hi: np.ndarray,
    scale: np.ndarray,
    fresh: np.ndarray,
    out: np.ndarray,
) -> None:
    """Noise, clip and scale ``raw`` (len(rows), dim) into the history rows of ``out``.

    ``out`` is (N, history * dim), oldest frame first. A row with ``fresh[r]`` (just reset) gets
    the new frame in every slot and is no longer fresh; others shift one frame and append it.
    Entry ``(i, c)``'s noise is draw ``i * dim + c`` of stream ``noise_key`` (``scalar.observe``).
    """
    dim = raw.shape[1]
    history = out.shape[1] // dim
    for i in prange(rows.shape[0]):
        r = rows[i]
        if not fresh[r]:
            for c in range(dim * (history - 1)):
                out[r, c] = out[r, c + dim]
        last = dim * (history - 1)
        for c in range(dim):
            out[r, last + c] = observe(
                raw[i, c], noise_amp[c], noise_key, i * dim + c, clip_lo[c], clip_hi[c], scale[c]
            )
        if fresh[r]:
            for h in range(history - 1):
                for c in range(dim):
                    out[r, h * dim + c] = out[r, last + c]
            fresh[r] = False


@njit(cache=True)
def proprioceptive_row(
    sd: np.ndarray, qpos: np.ndarray, qvel: np.ndarray, base_cols: np.ndarray, qadr: np.ndarray,
    dadr: np.ndarray, default: np.ndarray, action: np.ndarray, command: np.ndarray, r: int, raw: np.ndarray,
) -> None:  # fmt: skip
    """The raw policy columns of a velocity task for env ``r`` into ``raw``: base linear velocity 3
    and gyro 3 (``base_cols[0]``, ``[1]``), projected gravity 3 (quat at ``base_cols[2]``), joint
    positions minus ``default``, joint velocities, last action, command 3 (the direct variants' form
    of ``envruntime.tasks.common.manager_terms.proprioceptive_terms``)."""
    vel, gyro, quat = base_cols[0], base_cols[1], base_cols[2]
    nj, na = qadr.shape[0], action.shape[1]
    for a in range(3):
        raw[a] = sd[r, vel + a]
        raw[3 + a] = sd[r, gyro + a]
    gx, gy, gz = projected_gravity(sd[r, quat], sd[r, quat + 1], sd[r, quat + 2], sd[r, quat + 3])
    raw[6] = gx
    raw[7] = gy
    raw[8] = gz
    for j in range(nj):
        raw[9 + j] = qpos[r, qadr[j]] - default[j]
        raw[9 + nj + j] = qvel[r, dadr[j]]
    for k in range(na):
        raw[9 + 2 * nj + k] = action[r, k]
    for a in range(3):
        raw[9 + 2 * nj + na + a] = command[r, a]
