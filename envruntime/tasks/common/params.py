"""The parameter blocks the tasks share: plain dataclasses of numbers and names, which both
variants of a task read (no manager import; the manager terms built from them are in
``envruntime.tasks.common.manager_terms``).

``TaskCfg`` holds what every task has (control rate, episode length, joint-position actions,
pushes, soft joint limits); ``VelocityTaskCfg`` adds what the velocity-tracking tasks (go2,
g1 walk) share: the ``twist`` command, the fall termination, the root/joint reset and the noise of
the proprioceptive observation terms. Fields without a default are the ones whose values differ
between tasks; each task's dataclass gives them. All fields are keyword-only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class BaseSensors:
    """The sensors of a velocity task's base: body-frame linear velocity, gyro, orientation."""

    linvel: str
    gyro: str
    quat: str


@dataclass(frozen=True)
class FootSensors:
    """Per foot (same order in each): sole position, world linear velocity, touch."""

    pos: tuple[str, ...]
    vel: tuple[str, ...]
    touch: tuple[str, ...]


@dataclass(kw_only=True)
class TaskCfg:
    """Every task: ``decimation`` physics substeps per control step, episodes of
    ``episode_length_s``, targets ``home + action_scale * clip(a, +-action_clip)``, pushes of
    ``push_vel`` every U(``push_interval_s``) s, soft joint limits at ``joint_soft_ratio`` of the
    range."""

    decimation: int = 4
    episode_length_s: float = 20.0
    action_scale: float = 0.25
    action_clip: float = 100.0
    joint_soft_ratio: float = 0.9
    push_interval_s: tuple[float, float] = (1.0, 3.0)
    push_vel: float = 0.5


@dataclass(kw_only=True)
class VelocityTaskCfg(TaskCfg):
    """A velocity-tracking task; see ``envruntime.tasks.go2_joystick_flat.params`` for the terms."""

    max_tilt_deg: float = 70.0
    # command
    lin_vel_x: tuple[float, float] = (-1.0, 1.0)
    lin_vel_y: tuple[float, float]
    ang_vel_z: tuple[float, float]
    heading: tuple[float, float] = (-math.pi, math.pi)
    command_resampling_s: tuple[float, float]
    rel_heading_envs: float = 0.3
    rel_standing_envs: float = 0.1
    heading_stiffness: float = 0.5
    # reset
    reset_xy: float = 0.5
    reset_z: tuple[float, float] = (0.0, 0.0)
    reset_yaw: float = math.pi
    reset_root_vel: float
    reset_joint_offset: float = 0.1
    # observation noise (uniform amplitude)
    noise_lin_vel: float
    noise_ang_vel: float = 0.2
    noise_gravity: float = 0.05
    noise_joint_pos: float = 0.01
    noise_joint_vel: float = 1.5
    # gait rewards: weights and shapes
    w_action_rate: float
    w_joint_limits: float = -1.0
    w_foot_clearance: float
    w_foot_slip: float = -0.1
    swing_height: float
    contact_threshold: float = 1.0
