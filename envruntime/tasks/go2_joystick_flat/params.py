"""go2_joystick_flat: Unitree Go2 velocity tracking on flat ground (mjlab / Playground style).

Scene ``assets/go2_scene.xml``; sim dt 0.005 s, decimation 4 (control dt 0.02 s), 20 s episodes
(1000 control steps). All numbers live in ``Go2JoystickCfg``; both variants read it.

Actions (12): joint-position targets = home pose + 0.25 * action (clip +-100), limited to the
actuators' ctrl ranges.

Observations:
  actor (48): base_lin_vel 3 (``local_linvel`` sensor, noise +-0.1), base_ang_vel 3 (``gyro``,
    +-0.2), projected_gravity 3 (from ``orientation``, +-0.05), joint_pos 12 (minus home,
    +-0.01), joint_vel 12 (+-1.5, then scale 0.05), last_action 12, command 3 (vx, vy, wz).
  critic (56): the actor terms without noise, foot_height 4 (foot site z - 0.022 m),
    foot_contact 4 (touch > 1 N).

Rewards (each ``weight * raw * 0.02``):
  track_lin_vel_xy  +1.0   exp(-|cmd_xy - v_xy|^2 / 0.5^2)
  track_ang_vel_z   +0.5   exp(-(cmd_wz - w_z)^2 / 0.5^2)
  upright           +0.5   exp(-|g_xy|^2 / 0.3^2)
  posture           +0.2   exp(-sum (q - q_home)^2 / 0.8^2)
  action_rate       -0.01  sum (a - a_prev)^2
  joint_limits      -1.0   sum of excursions outside the central 90 % of each joint range
  foot_clearance    -0.5   sum_f (h_f - 0.08)^2 |v_xy,f|
  foot_slip         -0.1   sum_f contact_f |v_xy,f|^2

Terminations: time_out (20 s; truncation), fell_over (tilt > 70 deg; terminal).
Events: reset_base (x, y +-0.5 m, yaw +-pi, root velocity +-0.5 per component),
  reset_joints (home +-0.1 rad, within range), push (every U(1, 3) s, vx, vy +-0.5 m/s).
Command ``twist``: vx U(-1, 1), vy U(-0.5, 0.5), wz U(-1, 1), resampled every U(5, 10) s;
  30 % of draws track a heading U(-pi, pi) (wz = clip(0.5 * heading error)), 10 % stand.
"""

from __future__ import annotations

from dataclasses import dataclass

from envruntime.robots import go2
from envruntime.tasks.common.params import BaseSensors, FootSensors, VelocityTaskCfg

BASE = BaseSensors(linvel=go2.BASE_LINVEL_SENSOR, gyro=go2.BASE_GYRO_SENSOR, quat=go2.BASE_QUAT_SENSOR)
FEET = FootSensors(pos=go2.FOOT_POS_SENSORS, vel=go2.FOOT_LINVEL_SENSORS, touch=go2.FOOT_TOUCH_SENSORS)


@dataclass(kw_only=True)
class Go2JoystickCfg(VelocityTaskCfg):
    """Every number of the task; see the module docstring for what each term computes (the
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
