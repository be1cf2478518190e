"""The task's parameters (one dataclass both variants read) and its manager configuration."""

from __future__ import annotations

import math
from dataclasses import dataclass

from envruntime.envs.manager_based import ManagerBasedEnvCfg
from envruntime.managers.mdp import actions, commands, events, observations, rewards, terminations
from envruntime.managers.terms import (
    ActionTermCfg,
    CommandTermCfg,
    EventTermCfg,
    ObsGroupCfg,
    ObsTermCfg,
    RewardTermCfg,
    TerminationTermCfg,
)

LEGS: tuple[str, ...] = ("FL", "FR", "RL", "RR")
FOOT_POS = [f"{leg}_foot_pos" for leg in LEGS]
FOOT_VEL = [f"{leg}_foot_linvel" for leg in LEGS]
FOOT_TOUCH = [f"{leg}_touch" for leg in LEGS]


@dataclass
class Go2JoystickCfg:
    """Every number of the task; see the package docstring for what each term computes."""

    decimation: int = 4
    episode_length_s: float = 20.0
    action_scale: float = 0.25
    action_clip: float = 100.0
    max_tilt_deg: float = 70.0
    # commands
    lin_vel_x: tuple[float, float] = (-1.0, 1.0)
    lin_vel_y: tuple[float, float] = (-0.5, 0.5)
    ang_vel_z: tuple[float, float] = (-1.0, 1.0)
    heading: tuple[float, float] = (-math.pi, math.pi)
    command_resampling_s: tuple[float, float] = (5.0, 10.0)
    rel_heading_envs: float = 0.3
    rel_standing_envs: float = 0.1
    heading_stiffness: float = 0.5
    # events
    reset_xy: float = 0.5
    reset_yaw: float = math.pi
    reset_root_vel: float = 0.5
    reset_joint_offset: float = 0.1
    push_interval_s: tuple[float, float] = (1.0, 3.0)
    push_vel: float = 0.5
    # observation noise (uniform amplitude) and scales
    noise_lin_vel: float = 0.1
    noise_ang_vel: float = 0.2
    noise_gravity: float = 0.05
    noise_joint_pos: float = 0.01
    noise_joint_vel: float = 1.5
    joint_vel_scale: float = 0.05
    # rewards: weights and shapes
    w_track_lin_vel: float = 1.0
    w_track_ang_vel: float = 0.5
    w_upright: float = 0.5
    w_posture: float = 0.2
    w_action_rate: float = -0.01
    w_joint_limits: float = -1.0
    w_foot_clearance: float = -0.5
    w_foot_slip: float = -0.1
    tracking_std: float = 0.5
    upright_std: float = 0.3
    posture_std: float = 0.8
    joint_soft_ratio: float = 0.9
    foot_radius: float = 0.022
    swing_height: float = 0.08
    contact_threshold: float = 1.0


def _policy_terms(cfg: Go2JoystickCfg) -> dict[str, ObsTermCfg]:
    return {
        "base_lin_vel": ObsTermCfg(observations.sensor, {"name": "local_linvel"}, noise=cfg.noise_lin_vel),
        "base_ang_vel": ObsTermCfg(observations.sensor, {"name": "gyro"}, noise=cfg.noise_ang_vel),
        "projected_gravity": ObsTermCfg(observations.projected_gravity, noise=cfg.noise_gravity),
        "joint_pos": ObsTermCfg(observations.joint_pos_rel, noise=cfg.noise_joint_pos),
        "joint_vel": ObsTermCfg(observations.joint_vel, noise=cfg.noise_joint_vel, scale=cfg.joint_vel_scale),
        "last_action": ObsTermCfg(observations.last_action),
        "command": ObsTermCfg(observations.generated_command, {"name": "twist"}),
    }


def manager_cfg(cfg: Go2JoystickCfg) -> ManagerBasedEnvCfg:
    """The manager-based description of the task."""
    feet = {"pos_sensors": FOOT_POS, "radius": cfg.foot_radius}
    critic = dict(_policy_terms(cfg))
    critic["foot_height"] = ObsTermCfg(observations.site_heights, feet)
    critic["foot_contact"] = ObsTermCfg(
        observations.contact_flags, {"touch_sensors": FOOT_TOUCH, "threshold": cfg.contact_threshold}
    )
    v, w = cfg.reset_root_vel, cfg.push_vel
    return ManagerBasedEnvCfg(
        task="go2_joystick_flat",
        decimation=cfg.decimation,
        episode_length_s=cfg.episode_length_s,
        keyframe="home",
        actions={
            "joint_pos": ActionTermCfg(
                actions.joint_position, {"scale": cfg.action_scale, "clip": cfg.action_clip}
            )
        },
        observations={
            "actor": ObsGroupCfg(_policy_terms(cfg)),
            "critic": ObsGroupCfg(critic, enable_noise=False),
        },
        rewards={
            "track_lin_vel_xy": RewardTermCfg(
                rewards.track_lin_vel_xy, cfg.w_track_lin_vel, {"std": cfg.tracking_std}
            ),
            "track_ang_vel_z": RewardTermCfg(
                rewards.track_ang_vel_z, cfg.w_track_ang_vel, {"std": cfg.tracking_std}
            ),
            "upright": RewardTermCfg(rewards.upright, cfg.w_upright, {"std": cfg.upright_std}),
            "posture": RewardTermCfg(rewards.posture, cfg.w_posture, {"std": cfg.posture_std}),
            "action_rate": RewardTermCfg(rewards.action_rate, cfg.w_action_rate),
            "joint_limits": RewardTermCfg(
                rewards.joint_limits, cfg.w_joint_limits, {"soft_ratio": cfg.joint_soft_ratio}
            ),
            "foot_clearance": RewardTermCfg(
                rewards.foot_clearance,
                cfg.w_foot_clearance,
                {
                    "pos_sensors": FOOT_POS,
                    "vel_sensors": FOOT_VEL,
                    "target_height": cfg.swing_height,
                    "radius": cfg.foot_radius,
                },
            ),
            "foot_slip": RewardTermCfg(
                rewards.foot_slip,
                cfg.w_foot_slip,
                {"vel_sensors": FOOT_VEL, "touch_sensors": FOOT_TOUCH, "threshold": cfg.contact_threshold},
            ),
        },
        terminations={
            "time_out": TerminationTermCfg(terminations.time_out, time_out=True),
            "fell_over": TerminationTermCfg(
                terminations.bad_orientation, {"limit_angle": math.radians(cfg.max_tilt_deg)}
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
                },
            )
        },
    )
