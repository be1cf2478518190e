"""Kernels of the humanoid terms: per-joint posture, squared sensor components, an angular
momentum proxy, contact counts, foot air time and contact-force features.

As in ``envruntime.kernels.reward``, each reward has a row function (``*_row``) that fused direct
kernels call too, and an array kernel filling ``out`` (N,) with it. Observation kernels work on a
row subset (output row ``i`` belongs to env ``rows[i]``).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from envruntime.kernels.parallel import rows_kernel


@njit(cache=True)
def posture_per_joint_row(
    qpos: np.ndarray, qpos_adr: np.ndarray, default: np.ndarray, inv_std: np.ndarray, r: int
) -> float:
    """``exp(-mean_j ((q_j - default_j) / std_j)^2)``: each joint with its own tolerance."""
    total = 0.0
    for j in range(qpos_adr.shape[0]):
        d = (qpos[r, qpos_adr[j]] - default[j]) * inv_std[j]
        total += d * d
    return math.exp(-total / qpos_adr.shape[0])


@njit(cache=True)
def squared_sum_row(sd: np.ndarray, cols: np.ndarray, r: int) -> float:
    """``sum_k sd[r, cols[k]]^2`` (e.g. the xy angular velocity of a body)."""
    total = 0.0
    for k in range(cols.shape[0]):
        v = np.float64(sd[r, cols[k]])
        total += v * v
    return total


@njit(cache=True)
def angular_momentum_proxy_row(
    sd: np.ndarray, pos_cols: np.ndarray, vel_cols: np.ndarray, mass: np.ndarray, r: int
) -> float:
    """``|L|^2`` of point masses ``mass[b]`` at world positions/velocities ``sd[r, pos_cols[b]:+3]``
    and ``sd[r, vel_cols[b]:+3]``, about their centre of mass.

    ``L = sum_b m_b p_b x v_b - M c x v_c`` with ``c``, ``v_c`` the mass-weighted mean position and
    velocity: the orbital angular momentum of the lumped bodies (their spin is left out).
    """
    m_total = 0.0
    mpx = mpy = mpz = mvx = mvy = mvz = 0.0
    lx = ly = lz = 0.0
    for b in range(mass.shape[0]):
        m = mass[b]
        p, v = pos_cols[b], vel_cols[b]
        px, py, pz = np.float64(sd[r, p]), np.float64(sd[r, p + 1]), np.float64(sd[r, p + 2])
        vx, vy, vz = np.float64(sd[r, v]), np.float64(sd[r, v + 1]), np.float64(sd[r, v + 2])
        m_total += m
        mpx += m * px
        mpy += m * py
        mpz += m * pz
        mvx += m * vx
        mvy += m * vy
        mvz += m * vz
        lx += m * (py * vz - pz * vy)
        ly += m * (pz * vx - px * vz)
        lz += m * (px * vy - py * vx)
    # M c x v_c = (sum m p) x (sum m v) / M
    lx -= (mpy * mvz - mpz * mvy) / m_total
    ly -= (mpz * mvx - mpx * mvz) / m_total
    lz -= (mpx * mvy - mpy * mvx) / m_total
    return lx * lx + ly * ly + lz * lz


@njit(cache=True)
def count_above_row(sd: np.ndarray, cols: np.ndarray, threshold: float, r: int) -> float:
    """How many of the columns ``cols`` exceed ``threshold`` (e.g. touch pads in contact)."""
    count = 0.0
    for k in range(cols.shape[0]):
        if sd[r, cols[k]] > threshold:
            count += 1.0
    return count


@rows_kernel
def posture_per_joint(
    qpos: np.ndarray, qpos_adr: np.ndarray, default: np.ndarray, inv_std: np.ndarray, out: np.ndarray
) -> None:
    for r in prange(out.shape[0]):
        out[r] = posture_per_joint_row(qpos, qpos_adr, default, inv_std, r)


@rows_kernel
def squared_sum(sd: np.ndarray, cols: np.ndarray, out: np.ndarray) -> None:
    for r in prange(out.shape[0]):
        out[r] = squared_sum_row(sd, cols, r)


@rows_kernel
def angular_momentum_proxy(
    sd: np.ndarray, pos_cols: np.ndarray, vel_cols: np.ndarray, mass: np.ndarray, out: np.ndarray
) -> None:
    for r in prange(out.shape[0]):
        out[r] = angular_momentum_proxy_row(sd, pos_cols, vel_cols, mass, r)


@rows_kernel
def count_above(sd: np.ndarray, cols: np.ndarray, threshold: float, out: np.ndarray) -> None:
    for r in prange(out.shape[0]):
        out[r] = count_above_row(sd, cols, threshold, r)


@njit(cache=True)
def update_air_time_row(
    sd: np.ndarray,
    touch_cols: np.ndarray,
    threshold: float,
    dt: float,
    episode_length: np.ndarray,
    stamp: np.ndarray,
    air_time: np.ndarray,
    r: int,
) -> None:
    """Advance the air time of env ``r``'s feet once per control step.

    At episode step 0 (just reset) every foot's air time is 0; otherwise, the first call at a new
    ``episode_length[r]`` zeroes the feet in contact (touch > threshold) and adds ``dt`` to the
    others. ``stamp[r]`` remembers the step of the last update, so repeated calls within one step
    (e.g. a done row's final observation and its post-reset one) count it once.
    """
    step = episode_length[r]
    if step == 0:
        for f in range(touch_cols.shape[0]):
            air_time[r, f] = 0.0
    elif stamp[r] != step:
        for f in range(touch_cols.shape[0]):
            if sd[r, touch_cols[f]] > threshold:
                air_time[r, f] = 0.0
            else:
                air_time[r, f] += dt
    stamp[r] = step


@rows_kernel
def air_time_rows(
    sd: np.ndarray,
    rows: np.ndarray,
    touch_cols: np.ndarray,
    threshold: float,
    dt: float,
    episode_length: np.ndarray,
    stamp: np.ndarray,
    air_time: np.ndarray,
    out: np.ndarray,
) -> None:
    """``update_air_time_row`` for ``rows``, then their air times into ``out``."""
    for i in prange(rows.shape[0]):
        r = rows[i]
        update_air_time_row(sd, touch_cols, threshold, dt, episode_length, stamp, air_time, r)
        for f in range(touch_cols.shape[0]):
            out[i, f] = air_time[r, f]


@njit(cache=True)
def force_feature(force: float) -> float:
    """``log1p(max(force, 0))``: a contact force compressed for a network input."""
    return math.log1p(max(np.float64(force), 0.0))


@rows_kernel
def force_feature_rows(sd: np.ndarray, rows: np.ndarray, cols: np.ndarray, out: np.ndarray) -> None:
    """``out[i, k] = force_feature(sd[rows[i], cols[k]])``."""
    for i in prange(rows.shape[0]):
        r = rows[i]
        for k in range(cols.shape[0]):
            out[i, k] = force_feature(sd[r, cols[k]])
