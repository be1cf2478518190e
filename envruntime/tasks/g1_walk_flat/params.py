"""g1_walk_flat: Unitree G1 (29 DoF) velocity tracking on flat ground (mjlab G1 flat style).

Model ``assets/g1.xml`` (names in ``envruntime.robots.g1``); sim dt 0.005 s, decimation 4
(control dt 0.02 s), 20 s episodes (1000 control steps). All numbers live in ``G1WalkCfg``; both
variants read it. Sensors: "pelvis IMU" = ``imu_pelvis_{linvel,gyro,quat}`` (velocimeter and gyro
in the IMU frame, framequat in the world frame); feet = the sole sites ``{left,right}_foot``.

Actions (29): joint-position targets = home pose + 0.25 * action (clip +-100), limited to the
actuators' ctrl ranges (the joint ranges).

Observations:
  actor (99): base_lin_vel 3 (pelvis IMU velocimeter, noise +-0.5), base_ang_vel 3 (pelvis IMU
    gyro, +-0.2), projected_gravity 3 (pelvis IMU quat, +-0.05), joint_pos 29 (minus home,
    +-0.01), joint_vel 29 (+-1.5), last_action 29, command 3 (vx, vy, wz).
  critic (107): the actor terms without noise, then per foot (left, right): foot_height 2 (sole
    z), foot_air_time 2 (s since the sole last touched, > 1 N, counted per control step, 0 on
    reset), foot_contact 2 (touch > 1 N), foot_contact_force 2 (log1p of the sole's normal force).
    mjlab's critic has 111: its contact sensor gives a 3-D force per foot where this model's
    touch sensor gives the normal force only.

Rewards (each ``weight * raw * 0.02``; mjlab's G1 flat values):
  track_lin_vel_xy  +2.0   exp(-|cmd_xy - v_xy|^2 / 0.5^2), v from the pelvis IMU velocimeter
  track_ang_vel_z   +2.0   exp(-(cmd_wz - w_z)^2 / 0.5), w from the pelvis IMU gyro
  upright           +1.0   exp(-|g_xy|^2 / 0.2), g the gravity in the torso frame
  posture           +1.0   exp(-mean_j ((q_j - q_home,j) / std_j)^2), mjlab's G1 walking stds
                           (hip pitch 0.3, hip roll/yaw 0.15, knee 0.35, ankle pitch 0.25,
                           ankle roll 0.1, waist yaw/roll/pitch 0.2/0.08/0.1, shoulder
                           pitch/roll/yaw 0.15/0.15/0.1, elbow 0.15, wrists 0.3)
  body_ang_vel      -0.05  wx^2 + wy^2 of the torso (world frame)
  angular_momentum  -0.02  |L|^2, a proxy for the whole-body angular momentum about the CoM
                           (mjlab reads a subtreeangmom sensor, which the model lacks): the
                           model's mass lumped onto the 14 tracked bodies (each body to its
                           nearest tracked ancestor) as point masses at their origins,
                           L = sum m (p - c) x (v - v_c) from their framepos/framelinvel
                           sensors. Link spin is left out, so it reads lower than MuJoCo's
                           subtreeangmom (~30 % of |L|^2 on random joint velocities), but it is
                           the same on every engine (MotrixSim's subtreeangmom was not: 13.5
                           vs MuJoCo's 7.1 on one state just reset)
  self_collisions   -1.0   number of self-contact pads (hands vs torso/pelvis, shins vs each
                           other) pressed with more than 10 N (a shin-shin hit counts twice)
  action_rate       -0.1   sum (a - a_prev)^2
  joint_limits      -1.0   sum of excursions outside the central 90 % of each joint range
  foot_clearance    -2.0   sum_f (h_f - 0.1)^2 |v_xy,f|  (not gated by the command, unlike mjlab)
  foot_slip         -0.1   sum_f contact_f |v_xy,f|^2

Terminations: time_out (20 s; truncation), fell_over (pelvis tilt > 70 deg; terminal).
Events: reset_base (x, y +-0.5 m, z +0.01..0.05 m, yaw +-pi, root velocity +-0.2 per component),
  reset_joints (home +-0.1 rad, within range), push (every U(1, 3) s, base vx, vy +-0.5 m/s).
Command ``twist`` (mjlab's): vx U(-1, 1), vy U(-1, 1), wz U(-0.5, 0.5), resampled every U(3, 8) s;
  30 % of draws track a heading U(-pi, pi) (wz = clip(0.5 * heading error)), 10 % stand.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from envruntime.robots import g1
from envruntime.tasks.common.params import BaseSensors, FootSensors, VelocityTaskCfg

BASE_LINVEL = g1.imu_sensor("pelvis", "linvel")
BASE_GYRO = g1.imu_sensor("pelvis", "gyro")
BASE_QUAT = g1.imu_sensor("pelvis", "quat")
TORSO_QUAT = g1.body_sensor("torso_link", "quat")
TORSO_ANGVEL = g1.body_sensor("torso_link", "angvel")
MOMENTUM_BODIES = list(g1.TRACKED_BODIES)
MOMENTUM_POS = [g1.body_sensor(b, "pos") for b in g1.TRACKED_BODIES]
MOMENTUM_VEL = [g1.body_sensor(b, "linvel") for b in g1.TRACKED_BODIES]
BASE = BaseSensors(linvel=BASE_LINVEL, gyro=BASE_GYRO, quat=BASE_QUAT)
FEET = FootSensors(pos=g1.FOOT_POS_SENSORS, vel=g1.FOOT_LINVEL_SENSORS, touch=g1.FOOT_TOUCH_SENSORS)
SELF_TOUCH = list(g1.SELF_COLLISION_TOUCH_SENSORS)


def _walking_posture_std() -> dict[str, float]:
    """mjlab's G1 "walking" posture tolerances [rad], by joint-name pattern."""
    return {
        r".*hip_pitch.*": 0.3,
        r".*hip_roll.*": 0.15,
        r".*hip_yaw.*": 0.15,
        r".*knee.*": 0.35,
        r".*ankle_pitch.*": 0.25,
        r".*ankle_roll.*": 0.1,
        r"waist_yaw.*": 0.2,
        r"waist_roll.*": 0.08,
        r"waist_pitch.*": 0.1,
        r".*shoulder_pitch.*": 0.15,
        r".*shoulder_roll.*": 0.15,
        r".*shoulder_yaw.*": 0.1,
        r".*elbow.*": 0.15,
        r".*wrist.*": 0.3,
    }


@dataclass(kw_only=True)
class G1WalkCfg(VelocityTaskCfg):
    """Every number of the task; see the module docstring for what each term computes (the
    shared ones and their defaults are in ``VelocityTaskCfg``)."""

    # commands
    lin_vel_y: tuple[float, float] = (-1.0, 1.0)
    ang_vel_z: tuple[float, float] = (-0.5, 0.5)
    command_resampling_s: tuple[float, float] = (3.0, 8.0)
    # events
    reset_z: tuple[float, float] = (0.01, 0.05)
    reset_root_vel: float = 0.2
    # observation noise (uniform amplitude)
    noise_lin_vel: float = 0.5
    # rewards: weights and shapes
    w_track_lin_vel: float = 2.0
    w_track_ang_vel: float = 2.0
    w_upright: float = 1.0
    w_posture: float = 1.0
    w_body_ang_vel: float = -0.05
    w_angular_momentum: float = -0.02
    w_self_collisions: float = -1.0
    w_action_rate: float = -0.1
    w_foot_clearance: float = -2.0
    lin_vel_std: float = math.sqrt(0.25)
    ang_vel_std: float = math.sqrt(0.5)
    upright_std: float = math.sqrt(0.2)
    posture_std: dict[str, float] = field(default_factory=_walking_posture_std)
    swing_height: float = 0.1
    self_collision_threshold: float = 10.0
