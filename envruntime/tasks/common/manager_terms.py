"""The manager terms the tasks share, built from the parameter blocks of
``envruntime.tasks.common.params`` (both variants of a task read the same numbers; the direct
variants never import this module).
"""

from __future__ import annotations

import math

from envruntime.managers.mdp import actions, commands, events, observations, rewards, terminations
from envruntime.managers.terms import (
    ActionTermCfg,
    CommandTermCfg,
    EventTermCfg,
    ObsTermCfg,
    RewardTermCfg,
    TerminationTermCfg,
)
from envruntime.tasks.common.params import BaseSensors, FootSensors, TaskCfg, VelocityTaskCfg

TWIST = "twist"  # the velocity command's name


def joint_position_actions(cfg: TaskCfg) -> dict[str, ActionTermCfg]:
    """The one action term: joint-position targets around the home pose."""
    return {
        "joint_pos": ActionTermCfg(
            actions.joint_position, {"scale": cfg.action_scale, "clip": cfg.action_clip}
        )
    }


def push_events(cfg: TaskCfg) -> dict[str, EventTermCfg]:
    """The interval push: a uniform xy base velocity kick of up to ``push_vel``."""
    w = cfg.push_vel
    return {
        "push": EventTermCfg(
            events.push_by_velocity,
            "interval",
            {"velocity_range": {"vx": (-w, w), "vy": (-w, w)}},
            interval_range_s=cfg.push_interval_s,
        )
    }


def time_out_termination() -> dict[str, TerminationTermCfg]:
    """The episode time limit (a truncation)."""
    return {"time_out": TerminationTermCfg(terminations.time_out, time_out=True)}


def proprioceptive_terms(
    cfg: VelocityTaskCfg, base: BaseSensors, joint_vel_scale: float = 1.0
) -> dict[str, ObsTermCfg]:
    """The policy terms of a velocity task: base velocities, gravity, joints, last action, command."""
    return {
        "base_lin_vel": ObsTermCfg(observations.sensor, {"name": base.linvel}, noise=cfg.noise_lin_vel),
        "base_ang_vel": ObsTermCfg(observations.sensor, {"name": base.gyro}, noise=cfg.noise_ang_vel),
        "projected_gravity": ObsTermCfg(
            observations.projected_gravity, {"quat_sensor": base.quat}, noise=cfg.noise_gravity
        ),
        "joint_pos": ObsTermCfg(observations.joint_pos_rel, noise=cfg.noise_joint_pos),
        "joint_vel": ObsTermCfg(observations.joint_vel, noise=cfg.noise_joint_vel, scale=joint_vel_scale),
        "last_action": ObsTermCfg(observations.last_action),
        "command": ObsTermCfg(observations.generated_command, {"name": TWIST}),
    }


def gait_rewards(
    cfg: VelocityTaskCfg, feet: FootSensors, foot_radius: float = 0.0
) -> dict[str, RewardTermCfg]:
    """action_rate, joint_limits, foot_clearance (sole height ``z - foot_radius``), foot_slip."""
    return {
        "action_rate": RewardTermCfg(rewards.action_rate, cfg.w_action_rate),
        "joint_limits": RewardTermCfg(
            rewards.joint_limits, cfg.w_joint_limits, {"soft_ratio": cfg.joint_soft_ratio}
        ),
        "foot_clearance": RewardTermCfg(
            rewards.foot_clearance,
            cfg.w_foot_clearance,
            {
                "pos_sensors": list(feet.pos),
                "vel_sensors": list(feet.vel),
                "target_height": cfg.swing_height,
                "radius": foot_radius,
            },
        ),
        "foot_slip": RewardTermCfg(
            rewards.foot_slip,
            cfg.w_foot_slip,
            {
                "vel_sensors": list(feet.vel),
                "touch_sensors": list(feet.touch),
                "threshold": cfg.contact_threshold,
            },
        ),
    }


def velocity_terminations(cfg: VelocityTaskCfg, quat_sensor: str) -> dict[str, TerminationTermCfg]:
    """Time limit and ``fell_over``: the ``quat_sensor`` body tilted by more than ``max_tilt_deg``."""
    return {
        **time_out_termination(),
        "fell_over": TerminationTermCfg(
            terminations.bad_orientation,
            {"limit_angle": math.radians(cfg.max_tilt_deg), "quat_sensor": quat_sensor},
        ),
    }


def velocity_events(cfg: VelocityTaskCfg) -> dict[str, EventTermCfg]:
    """Root pose/velocity and joint offsets of reset rows, then the push."""
    v = cfg.reset_root_vel
    return {
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
        **push_events(cfg),
    }


def twist_command(cfg: VelocityTaskCfg, quat_sensor: str) -> dict[str, CommandTermCfg]:
    """The ``twist`` command, its heading read from ``quat_sensor``."""
    return {
        TWIST: CommandTermCfg(
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
                "quat_sensor": quat_sensor,
            },
        )
    }
