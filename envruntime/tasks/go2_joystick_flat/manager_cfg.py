"""go2_joystick_flat's manager configuration: its terms, built from the numbers of ``params``."""

from __future__ import annotations

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
from envruntime.tasks.go2_joystick_flat.params import BASE, FEET, Go2JoystickCfg


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
