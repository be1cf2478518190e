"""g1_motion_tracking: Unitree G1 whole-body motion tracking (BeyondMimic style).

Scene ``assets/g1.xml``; sim dt 0.005 s, decimation 4 (control dt 0.02 s = one frame of the
50 fps reference clip ``assets/g1_motion.npz``, 5 s, looping). Episodes last 10 s (500 control
steps, BeyondMimic's length); the reference loops within them, so time_out is the only end
besides the tracking-error terminations. All numbers live in ``G1MotionTrackingCfg``.

Command ``motion`` (``motion_command.MotionCommand``): per env a frame of the clip, one frame on
per control step. Reset: start frame drawn by 1 s time bins weighted by
their failure rate (EMA, alpha 0.001, of terminal episodes ending in the bin) plus a uniform
share 0.1 / bins; the robot starts in the clip's state at that frame with uniform noise:
root x, y +-0.05 m, z +-0.01 m, roll, pitch +-0.1, yaw +-0.2 rad; root velocity vx, vy +-0.5,
vz +-0.2 m/s, wx, wy +-0.52, wz +-0.78 rad/s; joints +-0.1 rad (within range), clip joint
velocities. Re-anchoring: the reference bodies are rotated by the yaw of
``q_robot_torso * conj(q_ref_torso)`` and shifted so that the reference torso sits at the robot
torso's x, y (keeping the reference height).

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

from envruntime.backends.base import Backend
from envruntime.robots.g1 import G1_XML
from envruntime.tasks.g1_motion_tracking.config import COMMAND, G1MotionTrackingCfg, manager_cfg
from envruntime.tasks.g1_motion_tracking.direct import G1MotionTrackingDirectEnv
from envruntime.tasks.g1_motion_tracking.manager_env import MotionTrackingEnv

XML_PATH = G1_XML

__all__ = ["XML_PATH", "G1MotionTrackingCfg", "make_direct_env", "make_manager_env"]


def make_manager_env(
    backend: Backend, num_envs: int, cfg: G1MotionTrackingCfg | None = None
) -> MotionTrackingEnv:
    """The manager-based variant."""
    return MotionTrackingEnv(manager_cfg(cfg or G1MotionTrackingCfg()), backend, num_envs, COMMAND)


def make_direct_env(
    backend: Backend, num_envs: int, cfg: G1MotionTrackingCfg | None = None
) -> G1MotionTrackingDirectEnv:
    """The hand-fused variant."""
    return G1MotionTrackingDirectEnv(cfg or G1MotionTrackingCfg(), backend, num_envs)
