"""The task's parameters (one dataclass both variants read) and its manager configuration."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from envruntime.envs.manager_based import ManagerBasedEnvCfg
from envruntime.managers.mdp import observations, rewards
from envruntime.managers.terms import ObsGroupCfg, ObsTermCfg, RewardTermCfg
from envruntime.robots import g1
from envruntime.tasks.common import humanoid_terms as humanoid
from envruntime.tasks.common.manager_terms import (
    gait_rewards,
    joint_position_actions,
    proprioceptive_terms,
    twist_command,
    velocity_events,
    velocity_terminations,
)
from envruntime.tasks.common.params import BaseSensors, FootSensors, VelocityTaskCfg

BASE_LINVEL = g1.imu_sensor("pelvis", "linvel")
BASE_GYRO = g1.imu_sensor("pelvis", "gyro")
BASE_QUAT = g1.imu_sensor("pelvis", "quat")
TORSO_QUAT = g1.body_sensor("torso_link", "quat")
TORSO_ANGVEL = g1.body_sensor("torso_link", "angvel")
MOMENTUM_BODIES = list(g1.TRACKED_BODIES)
MOMENTUM_POS = [g1.body_sensor(b, "pos") for b in g1.TRACKED_BODIES]
MOMENTUM_VEL = [g1.body_sensor(b, "linvel") for b in g1.TRACKED_BODIES]
BASE = BaseSensors(linvel=BASE_LINVEL, gyro=BASE_GYRO, quat=BASE_QUAT)
FEET = FootSensors(pos=g1.FOOT_POS_SENSORS, vel=g1.FOOT_LINVEL_SENSORS, touch=g1.FOOT_TOUCH_SENSORS)
SELF_TOUCH = list(g1.SELF_COLLISION_TOUCH_SENSORS)


def _walking_posture_std() -> dict[str, float]:
    """mjlab's G1 "walking" posture tolerances [rad], by joint-name pattern."""
    return {
        r".*hip_pitch.*": 0.3,
        r".*hip_roll.*": 0.15,
        r".*hip_yaw.*": 0.15,
        r".*knee.*": 0.35,
        r".*ankle_pitch.*": 0.25,
        r".*ankle_roll.*": 0.1,
        r"waist_yaw.*": 0.2,
        r"waist_roll.*": 0.08,
        r"waist_pitch.*": 0.1,
        r".*shoulder_pitch.*": 0.15,
        r".*shoulder_roll.*": 0.15,
        r".*shoulder_yaw.*": 0.1,
        r".*elbow.*": 0.15,
        r".*wrist.*": 0.3,
    }


@dataclass(kw_only=True)
class G1WalkCfg(VelocityTaskCfg):
    """Every number of the task; see the package docstring for what each term computes (the
    shared ones and their defaults are in ``VelocityTaskCfg``)."""

    # commands
    lin_vel_y: tuple[float, float] = (-1.0, 1.0)
    ang_vel_z: tuple[float, float] = (-0.5, 0.5)
    command_resampling_s: tuple[float, float] = (3.0, 8.0)
    # events
    reset_z: tuple[float, float] = (0.01, 0.05)
    reset_root_vel: float = 0.2
    # observation noise (uniform amplitude)
    noise_lin_vel: float = 0.5
    # rewards: weights and shapes
    w_track_lin_vel: float = 2.0
    w_track_ang_vel: float = 2.0
    w_upright: float = 1.0
    w_posture: float = 1.0
    w_body_ang_vel: float = -0.05
    w_angular_momentum: float = -0.02
    w_self_collisions: float = -1.0
    w_action_rate: float = -0.1
    w_foot_clearance: float = -2.0
    lin_vel_std: float = math.sqrt(0.25)
    ang_vel_std: float = math.sqrt(0.5)
    upright_std: float = math.sqrt(0.2)
    posture_std: dict[str, float] = field(default_factory=_walking_posture_std)
    swing_height: float = 0.1
    self_collision_threshold: float = 10.0


def _critic_terms(cfg: G1WalkCfg) -> dict[str, ObsTermCfg]:
    return {
        **proprioceptive_terms(cfg, BASE),
        "foot_height": ObsTermCfg(observations.site_heights, {"pos_sensors": list(FEET.pos)}),
        "foot_air_time": ObsTermCfg(
            humanoid.foot_air_time, {"touch_sensors": list(FEET.touch), "threshold": cfg.contact_threshold}
        ),
        "foot_contact": ObsTermCfg(
            observations.contact_flags,
            {"touch_sensors": list(FEET.touch), "threshold": cfg.contact_threshold},
        ),
        "foot_contact_force": ObsTermCfg(
            humanoid.contact_force_features, {"touch_sensors": list(FEET.touch)}
        ),
    }


def _rewards(cfg: G1WalkCfg) -> dict[str, RewardTermCfg]:
    return {
        "track_lin_vel_xy": RewardTermCfg(
            rewards.track_lin_vel_xy, cfg.w_track_lin_vel, {"std": cfg.lin_vel_std, "vel_sensor": BASE_LINVEL}
        ),
        "track_ang_vel_z": RewardTermCfg(
            rewards.track_ang_vel_z, cfg.w_track_ang_vel, {"std": cfg.ang_vel_std, "gyro_sensor": BASE_GYRO}
        ),
        "upright": RewardTermCfg(
            rewards.upright, cfg.w_upright, {"std": cfg.upright_std, "quat_sensor": TORSO_QUAT}
        ),
        "posture": RewardTermCfg(humanoid.posture_per_joint, cfg.w_posture, {"std": cfg.posture_std}),
        "body_ang_vel": RewardTermCfg(
            humanoid.sensor_squared_sum, cfg.w_body_ang_vel, {"sensor": TORSO_ANGVEL, "components": (0, 1)}
        ),
        "angular_momentum": RewardTermCfg(
            humanoid.angular_momentum_proxy,
            cfg.w_angular_momentum,
            {"bodies": MOMENTUM_BODIES, "pos_sensors": MOMENTUM_POS, "vel_sensors": MOMENTUM_VEL},
        ),
        "self_collisions": RewardTermCfg(
            humanoid.contact_count,
            cfg.w_self_collisions,
            {"touch_sensors": SELF_TOUCH, "threshold": cfg.self_collision_threshold},
        ),
        **gait_rewards(cfg, FEET),
    }


def manager_cfg(cfg: G1WalkCfg) -> ManagerBasedEnvCfg:
    """The manager-based description of the task."""
    return ManagerBasedEnvCfg(
        task="g1_walk_flat",
        decimation=cfg.decimation,
        episode_length_s=cfg.episode_length_s,
        keyframe=g1.HOME_KEYFRAME,
        actions=joint_position_actions(cfg),
        observations={
            "actor": ObsGroupCfg(proprioceptive_terms(cfg, BASE)),
            "critic": ObsGroupCfg(_critic_terms(cfg), enable_noise=False),
        },
        rewards=_rewards(cfg),
        terminations=velocity_terminations(cfg, BASE_QUAT),
        events=velocity_events(cfg),
        commands=twist_command(cfg, BASE_QUAT),
    )
