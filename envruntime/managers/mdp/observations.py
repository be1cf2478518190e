"""Observation term funcs: each returns a callable ``(rows, out)`` with a ``dim``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from envruntime.kernels.observation import gather_columns, projected_gravity_rows, threshold_flags
from envruntime.managers.mdp.lookup import joint_ids, sensor_col, sensor_cols


@dataclass
class _Term:
    dim: int
    fn: Callable[[np.ndarray, np.ndarray], None]

    def __call__(self, rows: np.ndarray, out: np.ndarray) -> None:
        self.fn(rows, out)


def _gather(source: Callable[[], np.ndarray], cols: np.ndarray, offset: np.ndarray | None = None) -> _Term:
    """A term copying columns ``cols`` (minus ``offset``) of the array ``source()`` returns."""
    cols = np.ascontiguousarray(cols, dtype=np.int64)
    off = np.zeros(len(cols)) if offset is None else np.ascontiguousarray(offset, dtype=np.float64)
    return _Term(len(cols), lambda rows, out: gather_columns(source(), rows, cols, off, out))


def sensor(env: Any, name: str) -> _Term:
    """Sensor ``name`` as read (e.g. ``local_linvel``, ``gyro``)."""
    s = env.backend.info.sensor_slice(name)
    return _gather(lambda: env.backend.sensordata, np.arange(s.start, s.stop))


def projected_gravity(env: Any, quat_sensor: str = "orientation") -> _Term:
    """Gravity direction in the body frame of the ``framequat`` sensor ``quat_sensor``."""
    col = sensor_col(env, quat_sensor)
    return _Term(3, lambda rows, out: projected_gravity_rows(env.backend.sensordata, rows, col, out))


def joint_pos_rel(env: Any, joints: list[str] | None = None) -> _Term:
    """Joint positions minus the default pose."""
    ids = joint_ids(env, joints)
    adr = env.backend.info.joint_qpos_adr[ids]
    return _gather(lambda: env.backend.qpos, adr, env.default_qpos[adr])


def joint_vel(env: Any, joints: list[str] | None = None) -> _Term:
    """Joint velocities."""
    ids = joint_ids(env, joints)
    return _gather(lambda: env.backend.qvel, env.backend.info.joint_dof_adr[ids])


def last_action(env: Any) -> _Term:
    """The action applied this step."""
    manager = env.action_manager
    return _gather(lambda: manager.action, np.arange(manager.dim))


def generated_command(env: Any, name: str) -> _Term:
    """The current values of command ``name``."""
    command = env.command_manager.command(name)
    return _gather(lambda: command, np.arange(command.shape[1]))


def site_heights(env: Any, pos_sensors: list[str], radius: float = 0.0) -> _Term:
    """Height above z = 0 of ``framepos`` sensors, minus ``radius`` (e.g. foot spheres)."""
    return _gather(
        lambda: env.backend.sensordata, sensor_cols(env, pos_sensors, 2), np.full(len(pos_sensors), radius)
    )


def contact_flags(env: Any, touch_sensors: list[str], threshold: float = 1.0) -> _Term:
    """1.0 where a touch sensor reads more than ``threshold`` newtons, else 0.0."""
    cols = sensor_cols(env, touch_sensors)
    return _Term(
        len(cols), lambda rows, out: threshold_flags(env.backend.sensordata, rows, cols, threshold, out)
    )
