"""Term funcs for humanoids (mjlab's G1 velocity terms): per-joint posture, body angular velocity,
angular momentum proxy, self-collision count, foot air time and contact-force features.

Generic over robots: everything is named by sensors, joints and bodies. The construction-time
helpers ``joint_stds`` and ``lumped_masses`` live in ``envruntime.tasks.common.humanoid``, which
the hand-fused variants import too, so both resolve the same numbers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from envruntime.kernels import humanoid as k
from envruntime.managers.mdp.lookup import joint_ids, sensor_cols
from envruntime.tasks.common.humanoid import joint_stds, lumped_masses

RewardFn = Callable[[np.ndarray], None]


def posture_per_joint(env: Any, std: dict[str, float], joints: list[str] | None = None) -> RewardFn:
    """``exp(-mean_j ((q_j - default_j) / std_j)^2)``; ``std`` maps joint-name regexes to stds."""
    ids = joint_ids(env, joints)
    info = env.backend.info
    adr = info.joint_qpos_adr[ids]
    default = env.default_qpos[adr]
    inv_std = 1.0 / joint_stds([info.joint_names[i] for i in ids], std)
    return lambda out: k.posture_per_joint(env.backend.qpos, adr, default, inv_std, out)


def sensor_squared_sum(env: Any, sensor: str, components: tuple[int, ...]) -> RewardFn:
    """Sum of squares of ``components`` of ``sensor`` (e.g. a body's xy angular velocity)."""
    s = env.backend.info.sensor_slice(sensor)
    if any(not 0 <= c < s.stop - s.start for c in components):
        raise ValueError(f"sensor {sensor!r} has {s.stop - s.start} components, asked for {components}")
    cols = np.array([s.start + c for c in components], dtype=np.int64)
    return lambda out: k.squared_sum(env.backend.sensordata, cols, out)


def angular_momentum_proxy(
    env: Any, bodies: list[str], pos_sensors: list[str], vel_sensors: list[str]
) -> RewardFn:
    """``|L|^2``, ``L`` the angular momentum about the centre of mass of the model's mass lumped
    onto ``bodies`` (see ``lumped_masses``) at their ``framepos``/``framelinvel`` sensors."""
    if not len(bodies) == len(pos_sensors) == len(vel_sensors):
        raise ValueError("bodies, pos_sensors and vel_sensors must have the same length")
    mass = lumped_masses(env.backend.info.xml_path, bodies)
    pos_cols, vel_cols = sensor_cols(env, pos_sensors), sensor_cols(env, vel_sensors)
    return lambda out: k.angular_momentum_proxy(env.backend.sensordata, pos_cols, vel_cols, mass, out)


def contact_count(env: Any, touch_sensors: list[str], threshold: float) -> RewardFn:
    """How many ``touch_sensors`` read more than ``threshold`` newtons (e.g. self-collisions)."""
    cols = sensor_cols(env, touch_sensors)
    return lambda out: k.count_above(env.backend.sensordata, cols, threshold, out)


@dataclass
class _AirTime:
    env: Any
    touch_cols: np.ndarray
    threshold: float
    stamp: np.ndarray
    air_time: np.ndarray
    dim: int

    def __call__(self, rows: np.ndarray, out: np.ndarray) -> None:
        env = self.env
        k.air_time_rows(
            env.backend.sensordata,
            rows,
            self.touch_cols,
            self.threshold,
            env.step_dt,
            env.episode_length,
            self.stamp,
            self.air_time,
            out,
        )


def foot_air_time(env: Any, touch_sensors: list[str], threshold: float = 1.0) -> _AirTime:
    """Seconds each foot has been off the ground (touch <= ``threshold``), counted per control
    step and zeroed on reset (see ``envruntime.kernels.humanoid.update_air_time_row``)."""
    cols = sensor_cols(env, touch_sensors)
    n = env.num_envs
    return _AirTime(env, cols, float(threshold), np.full(n, -1, dtype=np.int64), np.zeros((n, len(cols))),
                    len(cols))  # fmt: skip


@dataclass
class _ForceFeature:
    env: Any
    cols: np.ndarray
    dim: int

    def __call__(self, rows: np.ndarray, out: np.ndarray) -> None:
        k.force_feature_rows(self.env.backend.sensordata, rows, self.cols, out)


def contact_force_features(env: Any, touch_sensors: list[str]) -> _ForceFeature:
    """``log1p`` of each touch sensor's normal force."""
    cols = sensor_cols(env, touch_sensors)
    return _ForceFeature(env, cols, len(cols))
