"""Reward term funcs: each returns a callable filling the raw (N,) values of its term."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from envruntime.kernels import reward as k
from envruntime.managers.mdp.lookup import joint_ids, sensor_col, sensor_cols

RewardFn = Callable[[np.ndarray], None]


def track_lin_vel_xy(
    env: Any, std: float, command: str = "twist", vel_sensor: str = "local_linvel"
) -> RewardFn:
    """Exp kernel of the body-frame xy velocity error to the command."""
    cmd, col = env.command_manager.command(command), sensor_col(env, vel_sensor)
    return lambda out: k.lin_vel_xy_tracking(cmd, env.backend.sensordata, col, std, out)


def track_ang_vel_z(env: Any, std: float, command: str = "twist", gyro_sensor: str = "gyro") -> RewardFn:
    """Exp kernel of the yaw-rate error to the command."""
    cmd, col = env.command_manager.command(command), sensor_col(env, gyro_sensor)
    return lambda out: k.ang_vel_z_tracking(cmd, env.backend.sensordata, col, std, out)


def upright(env: Any, std: float, quat_sensor: str = "orientation") -> RewardFn:
    """Exp kernel of the projected gravity's xy part (level body: 1)."""
    col = sensor_col(env, quat_sensor)
    return lambda out: k.upright(env.backend.sensordata, col, std, out)


def posture(env: Any, std: float, joints: list[str] | None = None) -> RewardFn:
    """Exp kernel of the squared distance of the joints to the default pose."""
    adr = env.backend.info.joint_qpos_adr[joint_ids(env, joints)]
    default = env.default_qpos[adr]
    return lambda out: k.posture(env.backend.qpos, adr, default, std, out)


def action_rate(env: Any) -> RewardFn:
    """Squared change of the action since the previous step."""
    manager = env.action_manager
    return lambda out: k.action_rate(manager.action, manager.prev_action, out)


def joint_limits(env: Any, soft_ratio: float = 0.9, joints: list[str] | None = None) -> RewardFn:
    """Distance outside the central ``soft_ratio`` of each joint's range."""
    if not 0.0 < soft_ratio <= 1.0:
        raise ValueError(f"soft_ratio must be in (0, 1], got {soft_ratio}")
    ids = joint_ids(env, joints)
    info = env.backend.info
    adr = info.joint_qpos_adr[ids]
    mid = info.joint_range[ids].mean(axis=1)
    half = 0.5 * soft_ratio * (info.joint_range[ids, 1] - info.joint_range[ids, 0])
    lo, hi = mid - half, mid + half
    return lambda out: k.joint_limits(env.backend.qpos, adr, lo, hi, out)


def foot_clearance(
    env: Any, pos_sensors: list[str], vel_sensors: list[str], target_height: float, radius: float = 0.0
) -> RewardFn:
    """Squared swing-height error of each foot weighted by its xy speed, summed."""
    z_cols, vel_cols = sensor_cols(env, pos_sensors, 2), sensor_cols(env, vel_sensors)
    return lambda out: k.foot_clearance(env.backend.sensordata, z_cols, vel_cols, radius, target_height, out)


def foot_slip(env: Any, vel_sensors: list[str], touch_sensors: list[str], threshold: float = 1.0) -> RewardFn:
    """Squared xy speed of the feet in contact, summed."""
    vel_cols, touch_cols = sensor_cols(env, vel_sensors), sensor_cols(env, touch_sensors)
    return lambda out: k.foot_slip(env.backend.sensordata, vel_cols, touch_cols, threshold, out)
