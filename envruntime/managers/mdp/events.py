"""Event term funcs: reset randomisation of the root and joints, interval pushes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from envruntime.kernels.reset import ROOT_DRAWS, sample_joint_offsets, sample_root_state
from envruntime.managers.mdp.lookup import joint_ids

_POSE_KEYS = ("x", "y", "z", "roll", "pitch", "yaw")
_VEL_KEYS = ("vx", "vy", "vz", "wx", "wy", "wz")


def _ranges(ranges: dict[str, tuple[float, float]], keys: tuple[str, ...], what: str) -> np.ndarray:
    unknown = set(ranges) - set(keys)
    if unknown:
        raise KeyError(f"unknown {what} keys {sorted(unknown)}; valid: {', '.join(keys)}")
    return np.array([ranges.get(key, (0.0, 0.0)) for key in keys], dtype=np.float64)


@dataclass
class _RootReset:
    pose_lo: np.ndarray  # (6,) x, y, z, roll, pitch, yaw
    pose_hi: np.ndarray
    vel_lo: np.ndarray  # (6,) root qvel
    vel_hi: np.ndarray
    draws: int = ROOT_DRAWS

    def __call__(self, u: np.ndarray, rows: np.ndarray, qpos: np.ndarray, qvel: np.ndarray) -> None:
        sample_root_state(u, self.pose_lo, self.pose_hi, self.vel_lo, self.vel_hi, qpos, qvel)


def reset_root_uniform(
    env: Any,
    pose_range: dict[str, tuple[float, float]],
    velocity_range: dict[str, tuple[float, float]] | None = None,
) -> _RootReset:
    """Offset the free base's default pose (x, y, z, roll, pitch, yaw) and set its velocity
    (vx, vy, vz, wx, wy, wz) uniformly within the given ranges (missing keys: 0)."""
    if not env.backend.info.nq >= 7:
        raise ValueError("reset_root_uniform needs a free base joint")
    pose = _ranges(pose_range, _POSE_KEYS, "pose_range")
    vel = _ranges(velocity_range or {}, _VEL_KEYS, "velocity_range")
    return _RootReset(pose[:, 0].copy(), pose[:, 1].copy(), vel[:, 0].copy(), vel[:, 1].copy())


@dataclass
class _JointReset:
    qpos_adr: np.ndarray
    offset: tuple[float, float]
    joint_lo: np.ndarray
    joint_hi: np.ndarray
    draws: int

    def __call__(self, u: np.ndarray, rows: np.ndarray, qpos: np.ndarray, qvel: np.ndarray) -> None:
        sample_joint_offsets(
            u, self.qpos_adr, self.offset[0], self.offset[1], self.joint_lo, self.joint_hi, qpos
        )


def reset_joints_offset(
    env: Any, offset_range: tuple[float, float], joints: list[str] | None = None
) -> _JointReset:
    """Add a uniform offset to each joint's default position, kept within its range."""
    ids = joint_ids(env, joints)
    info = env.backend.info
    return _JointReset(
        info.joint_qpos_adr[ids],
        (float(offset_range[0]), float(offset_range[1])),
        info.joint_range[ids, 0].copy(),
        info.joint_range[ids, 1].copy(),
        len(ids),
    )


@dataclass
class _Push:
    env: Any
    lo: np.ndarray
    hi: np.ndarray
    draws: int = 2

    def __call__(self, u: np.ndarray, rows: np.ndarray, qpos: np.ndarray, qvel: np.ndarray) -> None:
        self.env.backend.apply_body_velocity_kick(rows, self.lo + (self.hi - self.lo) * u)


def push_by_velocity(env: Any, velocity_range: dict[str, tuple[float, float]]) -> _Push:
    """Add a uniform world-frame xy velocity (keys vx, vy) to the free base."""
    ranges = _ranges(velocity_range, ("vx", "vy"), "velocity_range")
    return _Push(env, ranges[:, 0].copy(), ranges[:, 1].copy())
