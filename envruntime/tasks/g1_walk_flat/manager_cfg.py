"""g1_walk_flat's manager configuration: its terms, built from the numbers of ``params``."""

from __future__ import annotations

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
from envruntime.tasks.g1_walk_flat.params import (
    BASE,
    BASE_GYRO,
    BASE_LINVEL,
    BASE_QUAT,
    FEET,
    MOMENTUM_BODIES,
    MOMENTUM_POS,
    MOMENTUM_VEL,
    SELF_TOUCH,
    TORSO_ANGVEL,
    TORSO_QUAT,
    G1WalkCfg,
)


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
