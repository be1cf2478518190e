"""The direct variant: g1_walk_flat hand-fused into two Numba kernels around the action kernel.

Same semantics, parameters (``G1WalkCfg``), step order and random-number order as the manager
variant (see ``envruntime.envs.manager_based``); the plumbing (step skeleton, resets, pushes,
command timers) is ``envruntime.tasks.common.velocity_direct.VelocityDirectEnv``'s, the per-step
work is fused here:

* ``_post_physics``: counters, terminations and the weighted sum of the 11 rewards, one pass;
* ``_observe``: heading/standing command update, foot air time, actor and critic rows, one pass.

Every per-row formula is a function of ``envruntime.kernels`` that the manager terms call too,
evaluated in the same order with the same random numbers, so both variants agree bit for bit.
The heading update runs inside ``_observe``, after the interval pushes rather than before them
as in the manager variant: a push changes only velocities, so the yaw it reads is the same.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from envruntime.backends.base import Backend
from envruntime.envs.direct_base import kernel_args
from envruntime.kernels.command import update_velocity_command_row
from envruntime.kernels.humanoid import (
    angular_momentum_proxy_row,
    count_above_row,
    force_feature,
    posture_per_joint_row,
    squared_sum_row,
    update_air_time_row,
)
from envruntime.kernels.observation import proprioceptive_row
from envruntime.kernels.parallel import rows_kernel
from envruntime.kernels.reward import (
    action_rate_row,
    ang_vel_z_tracking_row,
    foot_clearance_row,
    foot_slip_row,
    joint_limits_row,
    lin_vel_xy_tracking_row,
    upright_row,
)
from envruntime.kernels.scalar import clip_scale, observe
from envruntime.kernels.termination import tilt_exceeds_row
from envruntime.robots.g1 import HOME_KEYFRAME
from envruntime.tasks.common.humanoid import joint_stds, lumped_masses
from envruntime.tasks.common.velocity_direct import VelocityDirectEnv
from envruntime.tasks.g1_walk_flat import params as p

NUM_FEET = 2
POLICY_DIM = 99  # lin vel 3, ang vel 3, gravity 3, joint pos 29, joint vel 29, last action 29, command 3
CRITIC_DIM = POLICY_DIM + 4 * NUM_FEET  # + foot height, air time, contact, contact force


@rows_kernel
def _post_physics(
    sd: np.ndarray,
    qpos: np.ndarray,
    cols: np.ndarray,
    feet: np.ndarray,
    ang_cols: np.ndarray,
    self_cols: np.ndarray,
    body_cols: np.ndarray,
    body_mass: np.ndarray,
    qadr: np.ndarray,
    default: np.ndarray,
    inv_std: np.ndarray,
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
    vel, gyro, base_quat, torso_quat = cols[0], cols[1], cols[2], cols[3]
    z_cols, vel_cols, touch_cols = feet[0], feet[1], feet[2]
    lin_std, ang_std, upright_std, swing, contact, self_threshold = (
        shape[0],
        shape[1],
        shape[2],
        shape[3],
        shape[4],
        shape[5],
    )
    for r in prange(episode_length.shape[0]):
        episode_length[r] += 1
        fell = tilt_exceeds_row(sd, base_quat, cos_tilt, r)
        terminated[r] = fell
        truncated[r] = episode_length[r] >= max_length and not fell
        done[r] = terminated[r] or truncated[r]
        total = 0.0
        total += lin_vel_xy_tracking_row(command, sd, vel, lin_std, r) * weights[0]
        total += ang_vel_z_tracking_row(command, sd, gyro, ang_std, r) * weights[1]
        total += upright_row(sd, torso_quat, upright_std, r) * weights[2]
        total += posture_per_joint_row(qpos, qadr, default, inv_std, r) * weights[3]
        total += squared_sum_row(sd, ang_cols, r) * weights[4]
        total += angular_momentum_proxy_row(sd, body_cols[0], body_cols[1], body_mass, r) * weights[5]
        total += count_above_row(sd, self_cols, self_threshold, r) * weights[6]
        total += action_rate_row(action, prev_action, r) * weights[7]
        total += joint_limits_row(qpos, qadr, soft_lo, soft_hi, r) * weights[8]
        total += foot_clearance_row(sd, z_cols, vel_cols, 0.0, swing, r) * weights[9]
        total += foot_slip_row(sd, vel_cols, touch_cols, contact, r) * weights[10]
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
    episode_length: np.ndarray,
    air_stamp: np.ndarray,
    air_time: np.ndarray,
    noise_amp: np.ndarray,
) -> None:
    """Optionally the command update, then foot air time and actor and critic rows for ``rows``."""
    base_quat = cols[2]
    z_cols, touch_cols = feet[0], feet[2]
    stiffness, ang_lo, ang_hi, contact, dt = (
        cmd_params[0],
        cmd_params[1],
        cmd_params[2],
        cmd_params[3],
        cmd_params[4],
    )
    inf = np.inf
    nf = z_cols.shape[0]
    for i in prange(rows.shape[0]):
        r = rows[i]
        raw = np.empty(POLICY_DIM)  # per row: iterations run in parallel (hoisted per thread)
        if update_command:
            update_velocity_command_row(
                sd, base_quat, stiffness, ang_lo, ang_hi, command, heading, is_heading, is_standing, r
            )
        proprioceptive_row(sd, qpos, qvel, cols, qadr, dadr, default, action, command, r, raw)
        for col in range(POLICY_DIM):
            actor[i, col] = observe(
                raw[col], noise_amp[col], noise_key, i * noise_amp.shape[0] + col, -inf, inf, 1.0
            )
            critic[i, col] = clip_scale(raw[col], -inf, inf, 1.0)
        update_air_time_row(sd, touch_cols, contact, dt, episode_length, air_stamp, air_time, r)
        for f in range(nf):
            flag = 1.0 if sd[r, touch_cols[f]] > contact else 0.0
            critic[i, POLICY_DIM + f] = clip_scale(sd[r, z_cols[f]], -inf, inf, 1.0)
            critic[i, POLICY_DIM + nf + f] = clip_scale(air_time[r, f], -inf, inf, 1.0)
            critic[i, POLICY_DIM + 2 * nf + f] = clip_scale(flag, -inf, inf, 1.0)
            critic[i, POLICY_DIM + 3 * nf + f] = clip_scale(
                force_feature(sd[r, touch_cols[f]]), -inf, inf, 1.0
            )


class G1WalkDirectEnv(VelocityDirectEnv):
    """g1_walk_flat without managers: the shared plumbing and the fused kernels."""

    task = "g1_walk_flat"
    cfg: p.G1WalkCfg

    def __init__(self, cfg: p.G1WalkCfg, backend: Backend) -> None:
        super().__init__(cfg, backend, HOME_KEYFRAME)
        info = backend.info
        nj = len(info.joint_names)
        if nj != info.nu or POLICY_DIM != 9 + 3 * nj + 3:
            raise ValueError(f"model {info.xml_path.name} is not the 29-joint G1 this task expects")
        self.inv_std = 1.0 / joint_stds(info.joint_names, cfg.posture_std)
        self.cols = self.sensor_cols([p.BASE_LINVEL, p.BASE_GYRO, p.BASE_QUAT, p.TORSO_QUAT])
        self.feet = np.stack(
            [self.sensor_cols(p.FEET.pos, 2), self.sensor_cols(p.FEET.vel), self.sensor_cols(p.FEET.touch)]
        )
        self.ang_cols = info.sensor_slice(p.TORSO_ANGVEL).start + np.arange(2, dtype=np.int64)  # wx, wy
        self.self_cols = self.sensor_cols(p.SELF_TOUCH)
        self.body_cols = np.stack([self.sensor_cols(p.MOMENTUM_POS), self.sensor_cols(p.MOMENTUM_VEL)])
        self.body_mass = lumped_masses(info.xml_path, p.MOMENTUM_BODIES)
        self.shape = np.array(
            [cfg.lin_vel_std, cfg.ang_vel_std, cfg.upright_std, cfg.swing_height, cfg.contact_threshold,
             cfg.self_collision_threshold]
        )  # fmt: skip
        self.weights = self.step_weights(
            [cfg.w_track_lin_vel, cfg.w_track_ang_vel, cfg.w_upright, cfg.w_posture, cfg.w_body_ang_vel,
             cfg.w_angular_momentum, cfg.w_self_collisions, cfg.w_action_rate, cfg.w_joint_limits,
             cfg.w_foot_clearance, cfg.w_foot_slip]
        )  # fmt: skip
        self.cmd_params = np.array(
            [cfg.heading_stiffness, cfg.ang_vel_z[0], cfg.ang_vel_z[1], cfg.contact_threshold, self.step_dt]
        )
        self.air_stamp = np.full(self.num_envs, -1, dtype=np.int64)
        self.air_time = np.zeros((self.num_envs, NUM_FEET))
        self._init_observations(self.proprioceptive_noise(), CRITIC_DIM)
        b = backend
        self._post_physics_args = kernel_args(
            _post_physics, sd=b.sensordata, qpos=b.qpos, cols=self.cols, feet=self.feet,
            ang_cols=self.ang_cols, self_cols=self.self_cols, body_cols=self.body_cols,
            body_mass=self.body_mass, qadr=self.qadr, default=self.joint_default, inv_std=self.inv_std,
            soft_lo=self.soft_lo, soft_hi=self.soft_hi, action=self.action, prev_action=self.prev_action,
            command=self.command, shape=self.shape, weights=self.weights, max_length=self.max_episode_length,
            cos_tilt=self.cos_tilt, episode_length=self.episode_length, terminated=self.terminated,
            truncated=self.truncated, done=self.done, reward=self.reward,
        )  # fmt: skip
        self._observe_args = kernel_args(
            _observe, leading=5, sd=b.sensordata, qpos=b.qpos, qvel=b.qvel, cols=self.cols, feet=self.feet,
            qadr=self.qadr, dadr=self.dadr, default=self.joint_default, action=self.action,
            command=self.command, heading=self.heading, is_heading=self.is_heading,
            is_standing=self.is_standing, cmd_params=self.cmd_params, episode_length=self.episode_length,
            air_stamp=self.air_stamp, air_time=self.air_time, noise_amp=self.noise_amp,
        )  # fmt: skip

    def _post_physics(self) -> None:
        _post_physics(*self._post_physics_args)

    def _observe_rows(
        self, rows: np.ndarray, update_command: bool, noise_key: np.uint64, actor: np.ndarray,
        critic: np.ndarray,
    ) -> None:  # fmt: skip
        _observe(rows, update_command, noise_key, actor, critic, *self._observe_args)
