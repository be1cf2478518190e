"""The task's parameters (one dataclass both variants read) and its manager configuration."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from envruntime.envs.manager_based import ManagerBasedEnvCfg
from envruntime.managers.mdp import actions, commands, events, humanoid, observations, rewards, terminations
from envruntime.managers.terms import (
    ActionTermCfg,
    CommandTermCfg,
    EventTermCfg,
    ObsGroupCfg,
    ObsTermCfg,
    RewardTermCfg,
    TerminationTermCfg,
)
from envruntime.motion import g1_names as g1

BASE_LINVEL = g1.imu_sensor("pelvis", "linvel")
BASE_GYRO = g1.imu_sensor("pelvis", "gyro")
BASE_QUAT = g1.imu_sensor("pelvis", "quat")
TORSO_QUAT = g1.body_sensor("torso_link", "quat")
TORSO_ANGVEL = g1.body_sensor("torso_link", "angvel")
MOMENTUM_BODIES = list(g1.TRACKED_BODIES)
MOMENTUM_POS = [g1.body_sensor(b, "pos") for b in g1.TRACKED_BODIES]
MOMENTUM_VEL = [g1.body_sensor(b, "linvel") for b in g1.TRACKED_BODIES]
FOOT_POS = list(g1.FOOT_POS_SENSORS)
FOOT_VEL = list(g1.FOOT_LINVEL_SENSORS)
FOOT_TOUCH = list(g1.FOOT_TOUCH_SENSORS)
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


@dataclass
class G1WalkCfg:
    """Every number of the task; see the package docstring for what each term computes."""

    decimation: int = 4
    episode_length_s: float = 20.0
    action_scale: float = 0.25
    action_clip: float = 100.0
    max_tilt_deg: float = 70.0
    # commands
    lin_vel_x: tuple[float, float] = (-1.0, 1.0)
    lin_vel_y: tuple[float, float] = (-1.0, 1.0)
    ang_vel_z: tuple[float, float] = (-0.5, 0.5)
    heading: tuple[float, float] = (-math.pi, math.pi)
    command_resampling_s: tuple[float, float] = (3.0, 8.0)
    rel_heading_envs: float = 0.3
    rel_standing_envs: float = 0.1
    heading_stiffness: float = 0.5
    # events
    reset_xy: float = 0.5
    reset_z: tuple[float, float] = (0.01, 0.05)
    reset_yaw: float = math.pi
    reset_root_vel: float = 0.2
    reset_joint_offset: float = 0.1
    push_interval_s: tuple[float, float] = (1.0, 3.0)
    push_vel: float = 0.5
    # observation noise (uniform amplitude)
    noise_lin_vel: float = 0.5
    noise_ang_vel: float = 0.2
    noise_gravity: float = 0.05
    noise_joint_pos: float = 0.01
    noise_joint_vel: float = 1.5
    # rewards: weights and shapes
    w_track_lin_vel: float = 2.0
    w_track_ang_vel: float = 2.0
    w_upright: float = 1.0
    w_posture: float = 1.0
    w_body_ang_vel: float = -0.05
    w_angular_momentum: float = -0.02
    w_self_collisions: float = -1.0
    w_action_rate: float = -0.1
    w_joint_limits: float = -1.0
    w_foot_clearance: float = -2.0
    w_foot_slip: float = -0.1
    lin_vel_std: float = math.sqrt(0.25)
    ang_vel_std: float = math.sqrt(0.5)
    upright_std: float = math.sqrt(0.2)
    posture_std: dict[str, float] = field(default_factory=_walking_posture_std)
    joint_soft_ratio: float = 0.9
    swing_height: float = 0.1
    contact_threshold: float = 1.0
    self_collision_threshold: float = 10.0


def _policy_terms(cfg: G1WalkCfg) -> dict[str, ObsTermCfg]:
    return {
        "base_lin_vel": ObsTermCfg(observations.sensor, {"name": BASE_LINVEL}, noise=cfg.noise_lin_vel),
        "base_ang_vel": ObsTermCfg(observations.sensor, {"name": BASE_GYRO}, noise=cfg.noise_ang_vel),
        "projected_gravity": ObsTermCfg(
            observations.projected_gravity, {"quat_sensor": BASE_QUAT}, noise=cfg.noise_gravity
        ),
        "joint_pos": ObsTermCfg(observations.joint_pos_rel, noise=cfg.noise_joint_pos),
        "joint_vel": ObsTermCfg(observations.joint_vel, noise=cfg.noise_joint_vel),
        "last_action": ObsTermCfg(observations.last_action),
        "command": ObsTermCfg(observations.generated_command, {"name": "twist"}),
    }


def _critic_terms(cfg: G1WalkCfg) -> dict[str, ObsTermCfg]:
    return {
        **_policy_terms(cfg),
        "foot_height": ObsTermCfg(observations.site_heights, {"pos_sensors": FOOT_POS}),
        "foot_air_time": ObsTermCfg(
            humanoid.foot_air_time, {"touch_sensors": FOOT_TOUCH, "threshold": cfg.contact_threshold}
        ),
        "foot_contact": ObsTermCfg(
            observations.contact_flags, {"touch_sensors": FOOT_TOUCH, "threshold": cfg.contact_threshold}
        ),
        "foot_contact_force": ObsTermCfg(humanoid.contact_force_features, {"touch_sensors": FOOT_TOUCH}),
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
        "action_rate": RewardTermCfg(rewards.action_rate, cfg.w_action_rate),
        "joint_limits": RewardTermCfg(
            rewards.joint_limits, cfg.w_joint_limits, {"soft_ratio": cfg.joint_soft_ratio}
        ),
        "foot_clearance": RewardTermCfg(
            rewards.foot_clearance,
            cfg.w_foot_clearance,
            {"pos_sensors": FOOT_POS, "vel_sensors": FOOT_VEL, "target_height": cfg.swing_height},
        ),
        "foot_slip": RewardTermCfg(
            rewards.foot_slip,
            cfg.w_foot_slip,
            {"vel_sensors": FOOT_VEL, "touch_sensors": FOOT_TOUCH, "threshold": cfg.contact_threshold},
        ),
    }


def manager_cfg(cfg: G1WalkCfg) -> ManagerBasedEnvCfg:
    """The manager-based description of the task."""
    v, w = cfg.reset_root_vel, cfg.push_vel
    return ManagerBasedEnvCfg(
        task="g1_walk_flat",
        decimation=cfg.decimation,
        episode_length_s=cfg.episode_length_s,
        keyframe=g1.HOME_KEYFRAME,
        actions={
            "joint_pos": ActionTermCfg(
                actions.joint_position, {"scale": cfg.action_scale, "clip": cfg.action_clip}
            )
        },
        observations={
            "actor": ObsGroupCfg(_policy_terms(cfg)),
            "critic": ObsGroupCfg(_critic_terms(cfg), enable_noise=False),
        },
        rewards=_rewards(cfg),
        terminations={
            "time_out": TerminationTermCfg(terminations.time_out, time_out=True),
            "fell_over": TerminationTermCfg(
                terminations.bad_orientation,
                {"limit_angle": math.radians(cfg.max_tilt_deg), "quat_sensor": BASE_QUAT},
            ),
        },
        events={
            "reset_base": EventTermCfg(
                events.reset_root_uniform,
                "reset",
                {
                    "pose_range": {
                        "x": (-cfg.reset_xy, cfg.reset_xy),
                        "y": (-cfg.reset_xy, cfg.reset_xy),
                        "z": cfg.reset_z,
                        "yaw": (-cfg.reset_yaw, cfg.reset_yaw),
                    },
                    "velocity_range": {k: (-v, v) for k in ("vx", "vy", "vz", "wx", "wy", "wz")},
                },
            ),
            "reset_joints": EventTermCfg(
                events.reset_joints_offset,
                "reset",
                {"offset_range": (-cfg.reset_joint_offset, cfg.reset_joint_offset)},
            ),
            "push": EventTermCfg(
                events.push_by_velocity,
                "interval",
                {"velocity_range": {"vx": (-w, w), "vy": (-w, w)}},
                interval_range_s=cfg.push_interval_s,
            ),
        },
        commands={
            "twist": CommandTermCfg(
                commands.UniformVelocityCommand,
                {
                    "lin_vel_x": cfg.lin_vel_x,
                    "lin_vel_y": cfg.lin_vel_y,
                    "ang_vel_z": cfg.ang_vel_z,
                    "heading": cfg.heading,
                    "resampling_time_range": cfg.command_resampling_s,
                    "rel_heading_envs": cfg.rel_heading_envs,
                    "rel_standing_envs": cfg.rel_standing_envs,
                    "heading_stiffness": cfg.heading_stiffness,
                    "quat_sensor": BASE_QUAT,
                },
            )
        },
    )
