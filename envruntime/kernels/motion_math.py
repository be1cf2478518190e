"""Scalar rigid-body math of motion tracking: quaternion products, yaw, frame changes, errors.

Quaternions are scalar-first ``(w, x, y, z)`` unit quaternions, as everywhere in envruntime.
"""

from __future__ import annotations

import math

from numba import njit

from envruntime.kernels.scalar import rotate_inverse, yaw_of


@njit(cache=True)
def quat_mul(
    aw: float, ax: float, ay: float, az: float, bw: float, bx: float, by: float, bz: float
) -> tuple[float, float, float, float]:
    """The Hamilton product ``a * b`` (rotate by ``b``, then by ``a``)."""
    return (
        aw * bw - ax * bx - ay * by - az * bz,
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
    )


@njit(cache=True)
def rotate(
    qw: float, qx: float, qy: float, qz: float, vx: float, vy: float, vz: float
) -> tuple[float, float, float]:
    """``R(q) v``: a vector of the frame of ``q`` expressed in the world."""
    return rotate_inverse(qw, -qx, -qy, -qz, vx, vy, vz)


@njit(cache=True)
def yaw_quat(qw: float, qx: float, qy: float, qz: float) -> tuple[float, float, float, float]:
    """The rotation about world z by the heading of ``q``."""
    half = 0.5 * yaw_of(qw, qx, qy, qz)
    return math.cos(half), 0.0, 0.0, math.sin(half)


@njit(cache=True)
def quat_error_angle(
    aw: float, ax: float, ay: float, az: float, bw: float, bx: float, by: float, bz: float
) -> float:
    """The angle [rad, 0..pi] of the rotation taking ``b`` to ``a``: ``|a * conj(b)|``."""
    dw, dx, dy, dz = quat_mul(aw, ax, ay, az, bw, -bx, -by, -bz)
    return 2.0 * math.atan2(math.sqrt(dx * dx + dy * dy + dz * dz), abs(dw))


@njit(cache=True)
def rotation_first_two_columns(
    qw: float, qx: float, qy: float, qz: float
) -> tuple[float, float, float, float, float, float]:
    """The first two columns of ``R(q)`` row by row: ``(R00, R01, R10, R11, R20, R21)``, the
    continuous 6-D orientation encoding of the tracking observations."""
    return (
        1.0 - 2.0 * (qy * qy + qz * qz),
        2.0 * (qx * qy - qw * qz),
        2.0 * (qx * qy + qw * qz),
        1.0 - 2.0 * (qx * qx + qz * qz),
        2.0 * (qx * qz - qw * qy),
        2.0 * (qy * qz + qw * qx),
    )
