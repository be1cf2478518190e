"""g1_motion_tracking: Unitree G1 whole-body motion tracking (BeyondMimic style).

Scene ``assets/g1.xml``; sim dt 0.005 s, decimation 4 (control dt 0.02 s = one frame of the
50 fps reference clip ``assets/g1_motion.npz``, 5 s, looping). Episodes last 10 s (500 control
steps, BeyondMimic's length); the reference loops within them, so time_out is the only end
besides the tracking-error terminations. All numbers live in ``G1MotionTrackingCfg``.

Command ``motion`` (``motion_command.MotionCommand``): per env a frame of the clip, one frame on
per control step. Reset: start frame drawn by 1 s time bins weighted by their failure rate (EMA,
alpha 0.001, of terminal episodes ending in the bin) plus a uniform share 0.1 / bins; the robot
starts in the clip's state at that frame with uniform noise: root x, y +-0.05 m, z +-0.01 m,
roll, pitch +-0.1, yaw +-0.2 rad; root velocity vx, vy +-0.5, vz +-0.2 m/s, wx, wy +-0.52,
wz +-0.78 rad/s; joints +-0.1 rad (within range), clip joint velocities. Re-anchoring: the
reference bodies are rotated by the yaw of ``q_robot_torso * conj(q_ref_torso)`` and shifted so
that the reference torso sits at the robot torso's x, y (keeping the reference height).

Actions (29): joint-position targets = home pose + 0.25 * action, within the ctrl ranges.

Observations (anchor = torso_link; "in the anchor frame" = in the robot torso's frame):
  actor (160): command 58 (reference joint positions 29, joint velocities 29),
    motion_anchor_pos_b 3 (reference torso position in the anchor frame, noise +-0.25),
    motion_anchor_ori_b 6 (reference torso orientation in the anchor frame, first two columns
    of its rotation matrix, +-0.05), base_lin_vel 3 (pelvis IMU velocimeter, +-0.5),
    base_ang_vel 3 (pelvis IMU gyro, +-0.2), joint_pos 29 (minus home, +-0.01),
    joint_vel 29 (+-0.5), actions 29 (last action).
  critic (286): command 58, motion_anchor_pos_b 3, motion_anchor_ori_b 6,
    body_pos 42 (14 tracked bodies' positions in the anchor frame),
    body_ori 84 (their orientations in the anchor frame, two columns each), base_lin_vel 3,
    base_ang_vel 3, joint_pos 29, joint_vel 29, actions 29; no noise.

Rewards (each ``weight * raw * 0.02``; BeyondMimic's weights and stds):
  motion_global_anchor_pos  +0.5   exp(-|p_ref_torso - p_torso|^2 / 0.3^2)         (world)
  motion_global_anchor_ori  +0.5   exp(-angle(q_ref_torso, q_torso)^2 / 0.4^2)
  motion_body_pos           +1.0   exp(-mean_b |p_rel_b - p_b|^2 / 0.3^2)          (re-anchored)
  motion_body_ori           +1.0   exp(-mean_b angle(q_rel_b, q_b)^2 / 0.4^2)
  motion_body_lin_vel       +1.0   exp(-mean_b |v_ref_b - v_b|^2 / 1.0^2)          (world)
  motion_body_ang_vel       +1.0   exp(-mean_b |w_ref_b - w_b|^2 / 3.14^2)
  action_rate               -0.1   sum (a - a_prev)^2
  joint_limits              -10.0  sum of excursions outside the central 90 % of each range
(BeyondMimic's undesired-contacts penalty is not included.)

Terminations: time_out (10 s; truncation); anchor_pos: |z_ref_torso - z_torso| > 0.25 m;
  anchor_ori: |g_z in the reference torso frame - g_z in the robot torso frame| > 0.8;
  ee_body_pos: an ankle-roll or wrist-yaw link's height differs from its re-anchored
  reference by > 0.25 m.
Events: push (every U(1, 3) s, vx, vy +-0.5 m/s).

Like Isaac Lab, rewards and terminations read the re-anchored reference computed at the end of
the previous step (before this step's physics), and the observation shows the frame the next
step should reach.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from envruntime.robots.g1 import ANCHOR_BODY, imu_sensor
from envruntime.tasks.common.params import TaskCfg
from envruntime.tasks.g1_motion_tracking.clip import G1_MOTION_NPZ

LIN_VEL_SENSOR = imu_sensor("pelvis", "linvel")
GYRO_SENSOR = imu_sensor("pelvis", "gyro")


@dataclass(kw_only=True)
class G1MotionTrackingCfg(TaskCfg):
    """Every number of the task; see the module docstring for what each term computes (the
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


SAMPLING_FIELDS: tuple[str, ...] = ("bin_s", "uniform_ratio", "alpha", "kernel_size", "kernel_lambda")


def sampling_params(cfg: G1MotionTrackingCfg) -> dict[str, float]:
    """The adaptive start sampler's settings (``motion.AdaptiveStartSampler`` keywords), as both
    variants pass them."""
    return {name: getattr(cfg, name) for name in SAMPLING_FIELDS}
