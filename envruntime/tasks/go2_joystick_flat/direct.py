"""The direct variant: go2_joystick_flat hand-fused into two Numba kernels around the action kernel.

Same semantics, parameters (``Go2JoystickCfg``), step order and random-number order as the
manager variant (see ``envruntime.envs.manager_based``); the plumbing (step skeleton, resets,
pushes, command timers) is ``envruntime.tasks.common.velocity_direct.VelocityDirectEnv``'s, the
per-step math is fused here:

* ``_post_physics``: counters, terminations and the weighted reward sum, one pass over envs;
* ``_observe``: heading/standing command update + actor and critic observations, one pass.

The kernels are serial, like the manager kernels (see ``envruntime.kernels``).

The row formulas come from ``envruntime.kernels`` (the same functions the manager terms call),
which is what makes both variants agree bit for bit. The heading update runs inside
``_observe``, after the interval pushes rather than before them as in the manager variant: a
push changes only velocities, so the yaw it reads, and the command, are the same.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from envruntime.backends.base import Backend
from envruntime.envs.direct_base import kernel_args
from envruntime.kernels.command import update_velocity_command_row
from envruntime.kernels.observation import proprioceptive_row
from envruntime.kernels.parallel import rows_kernel
from envruntime.kernels.reward import (
    action_rate_row,
    ang_vel_z_tracking_row,
    foot_clearance_row,
    foot_slip_row,
    joint_limits_row,
    lin_vel_xy_tracking_row,
    posture_row,
    upright_row,
)
from envruntime.kernels.scalar import clip_scale, observe
from envruntime.kernels.termination import tilt_exceeds_row
from envruntime.robots.go2 import HOME_KEYFRAME
from envruntime.tasks.common.velocity_direct import VelocityDirectEnv
from envruntime.tasks.go2_joystick_flat.params import BASE, FEET, Go2JoystickCfg

ACTOR_DIM = 48  # lin vel 3, ang vel 3, gravity 3, joint pos 12, joint vel 12, last action 12, command 3
CRITIC_DIM = 56  # actor terms without noise, foot heights 4, foot contacts 4


@rows_kernel
def _post_physics(
    sd: np.ndarray,
    qpos: np.ndarray,
    cols: np.ndarray,
    feet: np.ndarray,
    qadr: np.ndarray,
    default: np.ndarray,
    soft_lo: np.ndarray,
    soft_hi: np.ndarray,
    action: np.ndarray,
    prev_action: np.ndarray,
    command: np.ndarray,
    shape: np.ndarray,
    weights: np.ndarray,
    max_length: int,
    cos_tilt: float,
    episode_length: np.ndarray,
    terminated: np.ndarray,
    truncated: np.ndarray,
    done: np.ndarray,
    reward: np.ndarray,
) -> None:
    """Counters, terminations and the weighted reward of every env, one pass."""
    vel, gyro, quat = cols[0], cols[1], cols[2]
    z_cols, vel_cols, touch_cols = feet[0], feet[1], feet[2]
    tracking_std, upright_std, posture_std, radius, swing, contact = (
        shape[0],
        shape[1],
        shape[2],
        shape[3],
        shape[4],
        shape[5],
    )
    for r in prange(episode_length.shape[0]):
        episode_length[r] += 1
        fell = tilt_exceeds_row(sd, quat, cos_tilt, r)
        terminated[r] = fell
        truncated[r] = episode_length[r] >= max_length and not fell
        done[r] = terminated[r] or truncated[r]
        total = 0.0
        total += lin_vel_xy_tracking_row(command, sd, vel, tracking_std, r) * weights[0]
        total += ang_vel_z_tracking_row(command, sd, gyro, tracking_std, r) * weights[1]
        total += upright_row(sd, quat, upright_std, r) * weights[2]
        total += posture_row(qpos, qadr, default, posture_std, r) * weights[3]
        total += action_rate_row(action, prev_action, r) * weights[4]
        total += joint_limits_row(qpos, qadr, soft_lo, soft_hi, r) * weights[5]
        total += foot_clearance_row(sd, z_cols, vel_cols, radius, swing, r) * weights[6]
        total += foot_slip_row(sd, vel_cols, touch_cols, contact, r) * weights[7]
        reward[r] = total


@rows_kernel
def _observe(
    rows: np.ndarray,
    update_command: bool,
    noise_key: np.uint64,
    actor: np.ndarray,
    critic: np.ndarray,
    sd: np.ndarray,
    qpos: np.ndarray,
    qvel: np.ndarray,
    cols: np.ndarray,
    feet: np.ndarray,
    qadr: np.ndarray,
    dadr: np.ndarray,
    default: np.ndarray,
    action: np.ndarray,
    command: np.ndarray,
    heading: np.ndarray,
    is_heading: np.ndarray,
    is_standing: np.ndarray,
    cmd_params: np.ndarray,
    noise_amp: np.ndarray,
    scale: np.ndarray,
) -> None:
    """Optionally the command update, then actor and critic rows for ``rows``, one pass."""
    quat = cols[2]
    z_cols, touch_cols = feet[0], feet[2]
    stiffness, ang_lo, ang_hi, radius, contact = (
        cmd_params[0],
        cmd_params[1],
        cmd_params[2],
        cmd_params[3],
        cmd_params[4],
    )
    for i in prange(rows.shape[0]):
        r = rows[i]
        raw = np.empty(ACTOR_DIM)  # per row: iterations run in parallel (hoisted per thread)
        if update_command:
            update_velocity_command_row(
                sd, quat, stiffness, ang_lo, ang_hi, command, heading, is_heading, is_standing, r
            )
        proprioceptive_row(sd, qpos, qvel, cols, qadr, dadr, default, action, command, r, raw)
        for c in range(ACTOR_DIM):
            actor[i, c] = observe(
                raw[c], noise_amp[c], noise_key, i * noise_amp.shape[0] + c, -np.inf, np.inf, scale[c]
            )
            critic[i, c] = clip_scale(raw[c], -np.inf, np.inf, scale[c])
        for f in range(z_cols.shape[0]):
            critic[i, ACTOR_DIM + f] = clip_scale(sd[r, z_cols[f]] - radius, -np.inf, np.inf, 1.0)
            flag = 1.0 if sd[r, touch_cols[f]] > contact else 0.0
            critic[i, ACTOR_DIM + 4 + f] = clip_scale(flag, -np.inf, np.inf, 1.0)


class Go2JoystickDirectEnv(VelocityDirectEnv):
    """go2_joystick_flat without managers: the shared plumbing and the two fused kernels."""

    task = "go2_joystick_flat"
    cfg: Go2JoystickCfg

    def __init__(self, cfg: Go2JoystickCfg, backend: Backend) -> None:
        super().__init__(cfg, backend, HOME_KEYFRAME)
        nj = len(self.qadr)
        self.cols = self.sensor_cols([BASE.linvel, BASE.gyro, BASE.quat])
        self.feet = np.stack(
            [self.sensor_cols(FEET.pos, 2), self.sensor_cols(FEET.vel), self.sensor_cols(FEET.touch)]
        )
        self.shape = np.array(
            [cfg.tracking_std, cfg.upright_std, cfg.posture_std, cfg.foot_radius, cfg.swing_height,
             cfg.contact_threshold]
        )  # fmt: skip
        self.weights = self.step_weights(
            [cfg.w_track_lin_vel, cfg.w_track_ang_vel, cfg.w_upright, cfg.w_posture, cfg.w_action_rate,
             cfg.w_joint_limits, cfg.w_foot_clearance, cfg.w_foot_slip]
        )  # fmt: skip
        self.cmd_params = np.array(
            [
                cfg.heading_stiffness,
                cfg.ang_vel_z[0],
                cfg.ang_vel_z[1],
                cfg.foot_radius,
                cfg.contact_threshold,
            ]
        )
        self.scale = np.repeat(
            [1.0, 1.0, 1.0, 1.0, cfg.joint_vel_scale, 1.0, 1.0], [3, 3, 3, nj, nj, self.action_dim, 3]
        )
        self._init_observations(self.proprioceptive_noise(), CRITIC_DIM)
        b = backend
        self._post_physics_args = kernel_args(
            _post_physics, sd=b.sensordata, qpos=b.qpos, cols=self.cols, feet=self.feet, qadr=self.qadr,
            default=self.joint_default, soft_lo=self.soft_lo, soft_hi=self.soft_hi, action=self.action,
            prev_action=self.prev_action, command=self.command, shape=self.shape, weights=self.weights,
            max_length=self.max_episode_length, cos_tilt=self.cos_tilt, episode_length=self.episode_length,
            terminated=self.terminated, truncated=self.truncated, done=self.done, reward=self.reward,
        )  # fmt: skip
        self._observe_args = kernel_args(
            _observe, leading=5, sd=b.sensordata, qpos=b.qpos, qvel=b.qvel, cols=self.cols, feet=self.feet,
            qadr=self.qadr, dadr=self.dadr, default=self.joint_default, action=self.action,
            command=self.command, heading=self.heading, is_heading=self.is_heading,
            is_standing=self.is_standing, cmd_params=self.cmd_params, noise_amp=self.noise_amp,
            scale=self.scale,
        )  # fmt: skip

    def _post_physics(self) -> None:
        _post_physics(*self._post_physics_args)

    def _observe_rows(
        self, rows: np.ndarray, update_command: bool, noise_key: np.uint64, actor: np.ndarray,
        critic: np.ndarray,
    ) -> None:  # fmt: skip
        _observe(rows, update_command, noise_key, actor, critic, *self._observe_args)
