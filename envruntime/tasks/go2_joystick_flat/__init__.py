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

from envruntime.backends.base import Backend
from envruntime.envs.manager_based import ManagerBasedEnv
from envruntime.robots.go2 import GO2_SCENE_XML
from envruntime.tasks.go2_joystick_flat.config import Go2JoystickCfg, manager_cfg
from envruntime.tasks.go2_joystick_flat.direct import Go2JoystickDirectEnv

XML_PATH = GO2_SCENE_XML

__all__ = ["XML_PATH", "Go2JoystickCfg", "make_direct_env", "make_manager_env"]


def make_manager_env(backend: Backend, num_envs: int, cfg: Go2JoystickCfg | None = None) -> ManagerBasedEnv:
    """The manager-based variant."""
    return ManagerBasedEnv(manager_cfg(cfg or Go2JoystickCfg()), backend, num_envs)


def make_direct_env(
    backend: Backend, num_envs: int, cfg: Go2JoystickCfg | None = None
) -> Go2JoystickDirectEnv:
    """The hand-fused variant."""
    return Go2JoystickDirectEnv(cfg or Go2JoystickCfg(), backend, num_envs)
