"""The task's parameters (one dataclass both variants read) and its manager configuration."""

from __future__ import annotations

from dataclasses import dataclass

from envruntime.envs.manager_based import ManagerBasedEnvCfg
from envruntime.managers.mdp import observations, rewards
from envruntime.managers.terms import ObsGroupCfg, ObsTermCfg, RewardTermCfg
from envruntime.robots import go2
from envruntime.tasks.common.manager_terms import (
    gait_rewards,
    joint_position_actions,
    proprioceptive_terms,
    twist_command,
    velocity_events,
    velocity_terminations,
)
from envruntime.tasks.common.params import BaseSensors, FootSensors, VelocityTaskCfg

BASE = BaseSensors(linvel=go2.BASE_LINVEL_SENSOR, gyro=go2.BASE_GYRO_SENSOR, quat=go2.BASE_QUAT_SENSOR)
FEET = FootSensors(pos=go2.FOOT_POS_SENSORS, vel=go2.FOOT_LINVEL_SENSORS, touch=go2.FOOT_TOUCH_SENSORS)


@dataclass(kw_only=True)
class Go2JoystickCfg(VelocityTaskCfg):
    """Every number of the task; see the package docstring for what each term computes (the
    shared ones and their defaults are in ``VelocityTaskCfg``)."""

    # commands
    lin_vel_y: tuple[float, float] = (-0.5, 0.5)
    ang_vel_z: tuple[float, float] = (-1.0, 1.0)
    command_resampling_s: tuple[float, float] = (5.0, 10.0)
    # events
    reset_root_vel: float = 0.5
    # observation noise (uniform amplitude) and scales
    noise_lin_vel: float = 0.1
    joint_vel_scale: float = 0.05
    # rewards: weights and shapes
    w_track_lin_vel: float = 1.0
    w_track_ang_vel: float = 0.5
    w_upright: float = 0.5
    w_posture: float = 0.2
    w_action_rate: float = -0.01
    w_foot_clearance: float = -0.5
    tracking_std: float = 0.5
    upright_std: float = 0.3
    posture_std: float = 0.8
    foot_radius: float = 0.022
    swing_height: float = 0.08


def manager_cfg(cfg: Go2JoystickCfg) -> ManagerBasedEnvCfg:
    """The manager-based description of the task."""
    policy = proprioceptive_terms(cfg, BASE, cfg.joint_vel_scale)
    critic = {
        **policy,
        "foot_height": ObsTermCfg(
            observations.site_heights, {"pos_sensors": list(FEET.pos), "radius": cfg.foot_radius}
        ),
        "foot_contact": ObsTermCfg(
            observations.contact_flags,
            {"touch_sensors": list(FEET.touch), "threshold": cfg.contact_threshold},
        ),
    }
    return ManagerBasedEnvCfg(
        task="go2_joystick_flat",
        decimation=cfg.decimation,
        episode_length_s=cfg.episode_length_s,
        keyframe=go2.HOME_KEYFRAME,
        actions=joint_position_actions(cfg),
        observations={"actor": ObsGroupCfg(policy), "critic": ObsGroupCfg(critic, enable_noise=False)},
        rewards={
            "track_lin_vel_xy": RewardTermCfg(
                rewards.track_lin_vel_xy,
                cfg.w_track_lin_vel,
                {"std": cfg.tracking_std, "vel_sensor": BASE.linvel},
            ),
            "track_ang_vel_z": RewardTermCfg(
                rewards.track_ang_vel_z,
                cfg.w_track_ang_vel,
                {"std": cfg.tracking_std, "gyro_sensor": BASE.gyro},
            ),
            "upright": RewardTermCfg(
                rewards.upright, cfg.w_upright, {"std": cfg.upright_std, "quat_sensor": BASE.quat}
            ),
            "posture": RewardTermCfg(rewards.posture, cfg.w_posture, {"std": cfg.posture_std}),
            **gait_rewards(cfg, FEET, cfg.foot_radius),
        },
        terminations=velocity_terminations(cfg, BASE.quat),
        events=velocity_events(cfg),
        commands=twist_command(cfg, BASE.quat),
    )
