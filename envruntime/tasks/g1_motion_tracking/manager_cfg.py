"""g1_motion_tracking's manager configuration: its terms, built from the numbers of ``params``."""

from __future__ import annotations

from envruntime.envs.manager_based import ManagerBasedEnvCfg
from envruntime.managers.mdp import observations, rewards
from envruntime.managers.terms import (
    CommandTermCfg,
    ObsGroupCfg,
    ObsTermCfg,
    RewardTermCfg,
    TerminationTermCfg,
)
from envruntime.robots.g1 import HOME_KEYFRAME
from envruntime.tasks.common.manager_terms import joint_position_actions, push_events, time_out_termination
from envruntime.tasks.g1_motion_tracking import mdp
from envruntime.tasks.g1_motion_tracking.motion_command import MotionCommand
from envruntime.tasks.g1_motion_tracking.params import (
    GYRO_SENSOR,
    LIN_VEL_SENSOR,
    G1MotionTrackingCfg,
    sampling_params,
)

COMMAND = "motion"


def _shared_head(cfg: G1MotionTrackingCfg) -> dict[str, ObsTermCfg]:
    """The terms both groups start with (noise applies in the actor group only)."""
    cmd = {"command": COMMAND}
    return {
        "command": ObsTermCfg(observations.generated_command, {"name": COMMAND}),
        "motion_anchor_pos_b": ObsTermCfg(mdp.ref_anchor_pos_b, cmd, noise=cfg.noise_anchor_pos),
        "motion_anchor_ori_b": ObsTermCfg(mdp.ref_anchor_ori_b, cmd, noise=cfg.noise_anchor_ori),
    }


def _shared_tail(cfg: G1MotionTrackingCfg) -> dict[str, ObsTermCfg]:
    """The terms both groups end with."""
    return {
        "base_lin_vel": ObsTermCfg(observations.sensor, {"name": LIN_VEL_SENSOR}, noise=cfg.noise_lin_vel),
        "base_ang_vel": ObsTermCfg(observations.sensor, {"name": GYRO_SENSOR}, noise=cfg.noise_ang_vel),
        "joint_pos": ObsTermCfg(observations.joint_pos_rel, noise=cfg.noise_joint_pos),
        "joint_vel": ObsTermCfg(observations.joint_vel, noise=cfg.noise_joint_vel),
        "actions": ObsTermCfg(observations.last_action),
    }


def _rewards(cfg: G1MotionTrackingCfg) -> dict[str, RewardTermCfg]:
    def tracking(func: object, weight: float, std: float) -> RewardTermCfg:
        return RewardTermCfg(func, weight, {"std": std, "command": COMMAND})

    return {
        "motion_global_anchor_pos": tracking(
            mdp.ref_anchor_pos_tracking, cfg.w_anchor_pos, cfg.std_anchor_pos
        ),
        "motion_global_anchor_ori": tracking(
            mdp.ref_anchor_ori_tracking, cfg.w_anchor_ori, cfg.std_anchor_ori
        ),
        "motion_body_pos": tracking(mdp.body_pos_tracking, cfg.w_body_pos, cfg.std_body_pos),
        "motion_body_ori": tracking(mdp.body_ori_tracking, cfg.w_body_ori, cfg.std_body_ori),
        "motion_body_lin_vel": tracking(mdp.body_lin_vel_tracking, cfg.w_body_lin_vel, cfg.std_body_lin_vel),
        "motion_body_ang_vel": tracking(mdp.body_ang_vel_tracking, cfg.w_body_ang_vel, cfg.std_body_ang_vel),
        "action_rate": RewardTermCfg(rewards.action_rate, cfg.w_action_rate),
        "joint_limits": RewardTermCfg(
            rewards.joint_limits, cfg.w_joint_limits, {"soft_ratio": cfg.joint_soft_ratio}
        ),
    }


def manager_cfg(cfg: G1MotionTrackingCfg) -> ManagerBasedEnvCfg:
    """The manager-based description of the task."""
    cmd = {"command": COMMAND}
    return ManagerBasedEnvCfg(
        task="g1_motion_tracking",
        decimation=cfg.decimation,
        episode_length_s=cfg.episode_length_s,
        keyframe=HOME_KEYFRAME,
        actions=joint_position_actions(cfg),
        observations={
            "actor": ObsGroupCfg({**_shared_head(cfg), **_shared_tail(cfg)}),
            "critic": ObsGroupCfg(
                {
                    **_shared_head(cfg),
                    "body_pos": ObsTermCfg(mdp.body_pos_b, cmd),
                    "body_ori": ObsTermCfg(mdp.body_ori_b, cmd),
                    **_shared_tail(cfg),
                },
                enable_noise=False,
            ),
        },
        rewards=_rewards(cfg),
        terminations={
            **time_out_termination(),
            "anchor_pos": TerminationTermCfg(
                mdp.anchor_height_error, {"threshold": cfg.max_anchor_height_error, **cmd}
            ),
            "anchor_ori": TerminationTermCfg(
                mdp.anchor_gravity_error, {"threshold": cfg.max_anchor_gravity_error, **cmd}
            ),
            "ee_body_pos": TerminationTermCfg(
                mdp.body_height_error,
                {"threshold": cfg.max_end_effector_height_error, "bodies": cfg.end_effectors, **cmd},
            ),
        },
        events=push_events(cfg),
        events_write_reset_state=False,  # the motion command writes the reset rows' state
        commands={
            COMMAND: CommandTermCfg(
                MotionCommand,
                {
                    "clip_path": cfg.clip_path,
                    "anchor_body": cfg.anchor_body,
                    "root_body": cfg.root_body,
                    "pose_range": cfg.pose_range,
                    "velocity_range": cfg.velocity_range,
                    "joint_position_range": cfg.joint_position_range,
                    "sampling": sampling_params(cfg),
                },
            )
        },
    )
