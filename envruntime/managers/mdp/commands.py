"""Command term funcs: the uniform velocity command (twist) with heading control."""

from __future__ import annotations

from typing import Any

import numpy as np

from envruntime.kernels.command import RESAMPLE_DRAWS, resample_velocity_command, update_velocity_command
from envruntime.managers.mdp.lookup import sensor_col


class UniformVelocityCommand:
    """(vx, vy, wz) drawn uniformly per env every ``resampling_time_range`` seconds.

    A ``rel_heading_envs`` share of draws track a heading instead of a yaw rate (wz from a
    proportional controller on the heading error); a ``rel_standing_envs`` share stand still.
    Each resample draws (k, 7) numbers: time, vx, vy, wz, heading, heading-env, standing-env.
    """

    def __init__(
        self,
        env: Any,
        lin_vel_x: tuple[float, float],
        lin_vel_y: tuple[float, float],
        ang_vel_z: tuple[float, float],
        heading: tuple[float, float],
        resampling_time_range: tuple[float, float],
        rel_heading_envs: float = 0.0,
        rel_standing_envs: float = 0.0,
        heading_stiffness: float = 0.5,
        quat_sensor: str = "orientation",
    ) -> None:
        if resampling_time_range[0] <= 0:
            raise ValueError(f"resampling_time_range must be positive, got {resampling_time_range}")
        n = env.num_envs
        self._env = env
        self.ranges = np.array(
            [lin_vel_x, lin_vel_y, ang_vel_z, heading, resampling_time_range], dtype=np.float64
        )
        self.rel_heading = float(rel_heading_envs)
        self.rel_standing = float(rel_standing_envs)
        self.stiffness = float(heading_stiffness)
        self.quat_col = sensor_col(env, quat_sensor)
        self.command = np.zeros((n, 3))
        self.heading = np.zeros(n)
        self.is_heading = np.zeros(n, dtype=np.bool_)
        self.is_standing = np.zeros(n, dtype=np.bool_)
        self.time_left = np.zeros(n)

    def reset(self, rows: np.ndarray, rng: np.random.Generator) -> None:
        """Draw new commands for ``rows``."""
        u = rng.random((rows.shape[0], RESAMPLE_DRAWS))
        resample_velocity_command(
            u,
            rows,
            self.ranges,
            self.rel_heading,
            self.rel_standing,
            self.command,
            self.heading,
            self.is_heading,
            self.is_standing,
            self.time_left,
        )

    def compute(self, dt: float, rng: np.random.Generator) -> None:
        """Count down, resample the rows whose time ran out, then apply heading/standing."""
        self.time_left -= dt
        expired = np.flatnonzero(self.time_left <= 0.0)
        if expired.shape[0]:
            self.reset(expired, rng)
        update_velocity_command(
            self._env.backend.sensordata,
            self.quat_col,
            self.stiffness,
            self.ranges[2, 0],
            self.ranges[2, 1],
            self.command,
            self.heading,
            self.is_heading,
            self.is_standing,
        )
