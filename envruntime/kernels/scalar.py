"""Scalar formulas (quaternions, yaw, exp tracking kernels, observation post-processing).

Quaternions are scalar-first ``(w, x, y, z)`` unit quaternions, as everywhere in envruntime.
"""

from __future__ import annotations

import math

from numba import njit


@njit(cache=True)
def rotate_inverse(
    qw: float, qx: float, qy: float, qz: float, vx: float, vy: float, vz: float
) -> tuple[float, float, float]:
    """World vector ``v`` expressed in the frame of ``q``: ``R(q)^T v``."""
    tx = 2.0 * (qy * vz - qz * vy)
    ty = 2.0 * (qz * vx - qx * vz)
    tz = 2.0 * (qx * vy - qy * vx)
    return (
        vx - qw * tx + (qy * tz - qz * ty),
        vy - qw * ty + (qz * tx - qx * tz),
        vz - qw * tz + (qx * ty - qy * tx),
    )


@njit(cache=True)
def projected_gravity(qw: float, qx: float, qy: float, qz: float) -> tuple[float, float, float]:
    """The unit gravity direction (0, 0, -1) in the body frame of ``q``."""
    return rotate_inverse(qw, qx, qy, qz, 0.0, 0.0, -1.0)


@njit(cache=True)
def yaw_of(qw: float, qx: float, qy: float, qz: float) -> float:
    """Heading angle (rotation about world z) of ``q``."""
    return math.atan2(2.0 * (qw * qz + qx * qy), 1.0 - 2.0 * (qy * qy + qz * qz))


@njit(cache=True)
def wrap_to_pi(angle: float) -> float:
    """``angle`` mapped to [-pi, pi]."""
    return math.atan2(math.sin(angle), math.cos(angle))


@njit(cache=True)
def exp_kernel(error_sq: float, std: float) -> float:
    """``exp(-error_sq / std^2)``: 1 at zero error, the tracking rewards' shape."""
    return math.exp(-error_sq / (std * std))


@njit(cache=True)
def uniform(lo: float, hi: float, u: float) -> float:
    """Map ``u`` in [0, 1) to [lo, hi)."""
    return lo + (hi - lo) * u


@njit(cache=True)
def clamp(value: float, lo: float, hi: float) -> float:
    """``value`` limited to [lo, hi]."""
    return min(max(value, lo), hi)


@njit(cache=True)
def observe(raw: float, noise_amp: float, u: float, lo: float, hi: float, scale: float) -> float:
    """One observation entry: uniform noise in [-amp, amp] (from ``u`` in [0, 1)), clip, scale."""
    return clamp(raw + noise_amp * (2.0 * u - 1.0), lo, hi) * scale
