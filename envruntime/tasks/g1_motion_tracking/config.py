"""The task's parameters (one dataclass both variants read) and its manager configuration."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from envruntime.envs.manager_based import ManagerBasedEnvCfg
from envruntime.managers.mdp import observations, rewards
from envruntime.managers.terms import (
    CommandTermCfg,
    ObsGroupCfg,
    ObsTermCfg,
    RewardTermCfg,
    TerminationTermCfg,
)
from envruntime.robots.g1 import ANCHOR_BODY, HOME_KEYFRAME, imu_sensor
from envruntime.tasks.common.manager_terms import joint_position_actions, push_events, time_out_termination
from envruntime.tasks.common.params import TaskCfg
from envruntime.tasks.g1_motion_tracking import mdp
from envruntime.tasks.g1_motion_tracking.clip import G1_MOTION_NPZ
from envruntime.tasks.g1_motion_tracking.motion_command import MotionCommand

COMMAND = "motion"
LIN_VEL_SENSOR = imu_sensor("pelvis", "linvel")
GYRO_SENSOR = imu_sensor("pelvis", "gyro")


@dataclass(kw_only=True)
class G1MotionTrackingCfg(TaskCfg):
    """Every number of the task; see the package docstring for what each term computes (the
    shared ones and their defaults are in ``TaskCfg``)."""

    episode_length_s: float = 10.0
    action_clip: float = math.inf
    clip_path: Path = G1_MOTION_NPZ
    anchor_body: str = ANCHOR_BODY
    root_body: str = "pelvis"
    end_effectors: tuple[str, ...] = (
        "left_ankle_roll_link",
        "right_ankle_roll_link",
        "left_wrist_yaw_link",
        "right_wrist_yaw_link",
    )
    # reference-state initialisation noise
    pose_range: dict[str, tuple[float, float]] = field(
        default_factory=lambda: {
            "x": (-0.05, 0.05), "y": (-0.05, 0.05), "z": (-0.01, 0.01),
            "roll": (-0.1, 0.1), "pitch": (-0.1, 0.1), "yaw": (-0.2, 0.2),
        }
    )  # fmt: skip
    velocity_range: dict[str, tuple[float, float]] = field(
        default_factory=lambda: {
            "vx": (-0.5, 0.5), "vy": (-0.5, 0.5), "vz": (-0.2, 0.2),
            "wx": (-0.52, 0.52), "wy": (-0.52, 0.52), "wz": (-0.78, 0.78),
        }
    )  # fmt: skip
    joint_position_range: tuple[float, float] = (-0.1, 0.1)
    # adaptive sampling
    bin_s: float = 1.0
    uniform_ratio: float = 0.1
    alpha: float = 0.001
    kernel_size: int = 1
    kernel_lambda: float = 0.8
    # observation noise (uniform amplitude)
    noise_anchor_pos: float = 0.25
    noise_anchor_ori: float = 0.05
    noise_lin_vel: float = 0.5
    noise_ang_vel: float = 0.2
    noise_joint_pos: float = 0.01
    noise_joint_vel: float = 0.5
    # rewards: weights and exp-kernel stds
    w_anchor_pos: float = 0.5
    w_anchor_ori: float = 0.5
    w_body_pos: float = 1.0
    w_body_ori: float = 1.0
    w_body_lin_vel: float = 1.0
    w_body_ang_vel: float = 1.0
    w_action_rate: float = -0.1
    w_joint_limits: float = -10.0
    std_anchor_pos: float = 0.3
    std_anchor_ori: float = 0.4
    std_body_pos: float = 0.3
    std_body_ori: float = 0.4
    std_body_lin_vel: float = 1.0
    std_body_ang_vel: float = 3.14
    # terminations
    max_anchor_height_error: float = 0.25
    max_anchor_gravity_error: float = 0.8
    max_end_effector_height_error: float = 0.25


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
                    "bin_s": cfg.bin_s,
                    "uniform_ratio": cfg.uniform_ratio,
                    "alpha": cfg.alpha,
                    "kernel_size": cfg.kernel_size,
                    "kernel_lambda": cfg.kernel_lambda,
                },
            )
        },
    )
