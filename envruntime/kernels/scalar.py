"""Scalar formulas (quaternions, yaw, exp tracking kernels, observation noise and post-processing).

Quaternions are scalar-first ``(w, x, y, z)`` unit quaternions, as everywhere in envruntime.
"""

from __future__ import annotations

import math

import numpy as np
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


# Observation noise is counter-based: entry ``counter`` of a call draws from its stream ``key`` alone,
# so the rows' kernels draw it in parallel, and any thread count gives the same noise.
GOLDEN_GAMMA = np.uint64(0x9E3779B97F4A7C15)
MIX_1 = np.uint64(0xBF58476D1CE4E5B9)
MIX_2 = np.uint64(0x94D049BB133111EB)
TWO_TO_MINUS_53 = 1.0 / 9007199254740992.0


def draw_noise_key(rng: np.random.Generator) -> np.uint64:
    """The stream of one observation call's noise: one 64-bit draw of the env's generator."""
    return rng.integers(0, 2**64, dtype=np.uint64)


@njit(cache=True)
def noise_uniform(key: np.uint64, counter: int) -> float:
    """Draw ``counter`` of stream ``key``, in [0, 1): SplitMix64 (Steele, Lea and Flood, 2014) at
    state ``key + (counter + 1) * gamma``, its top 53 bits."""
    z = key + np.uint64(counter + 1) * GOLDEN_GAMMA
    z = (z ^ (z >> np.uint64(30))) * MIX_1
    z = (z ^ (z >> np.uint64(27))) * MIX_2
    z = z ^ (z >> np.uint64(31))
    return float(z >> np.uint64(11)) * TWO_TO_MINUS_53


@njit(cache=True)
def observe(
    raw: float, noise_amp: float, key: np.uint64, counter: int, lo: float, hi: float, scale: float
) -> float:
    """One observation entry: uniform noise in [-amp, amp] (draw ``counter`` of stream ``key``,
    drawn only where the amplitude is non-zero), clip, scale."""
    if noise_amp != 0.0:
        raw += noise_amp * (2.0 * noise_uniform(key, counter) - 1.0)
    return clip_scale(raw, lo, hi, scale)


@njit(cache=True)
def clip_scale(raw: float, lo: float, hi: float, scale: float) -> float:
    """One noiseless observation entry: clip, scale."""
    return clamp(raw, lo, hi) * scale
