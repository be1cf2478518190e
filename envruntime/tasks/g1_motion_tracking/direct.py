"""The direct variant: g1_motion_tracking hand-fused into two Numba kernels.

Same semantics, parameters (``G1MotionTrackingCfg``), step order and random-number order as the
manager variant (see ``envruntime.envs.manager_based`` and ``motion_command``); the reference, its
reset noise and the start-frame sampler are the ``motion`` module's, as in the manager variant.

The plumbing (step skeleton, resets, pushes) is ``envruntime.envs.direct_base.DirectEnv``'s; the
per-step math is fused here:

* ``_post_physics``: counters, the four terminations and the weighted reward, one pass over envs;
* ``_observe``: (optionally) the command's next frame and re-anchoring, then the actor and
  critic observations, one pass over the rows.

The row formulas come from ``envruntime.kernels`` (the functions the manager terms call), which
is what makes both variants agree bit for bit. The command's next frame and re-anchoring run
inside ``_observe``, after the interval pushes rather than before them as in the manager
variant: a push changes only velocities, and those stages read only the clip and body poses.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from envruntime.backends.base import Backend
from envruntime.envs.direct_base import DirectEnv, kernel_args
from envruntime.kernels.motion_command import advance_motion_row, relative_body_poses_row
from envruntime.kernels.motion_observation import (
    body_ori_b_into,
    body_pos_b_into,
    ref_anchor_ori_b_into,
    ref_anchor_pos_b_into,
)
from envruntime.kernels.motion_reward import (
    anchor_ori_error_row,
    anchor_pos_error_row,
    body_ori_error_row,
    body_pos_error_row,
    body_vel_error_row,
)
from envruntime.kernels.motion_termination import (
    anchor_gravity_error_row,
    anchor_height_error_row,
    body_height_error_row,
)
from envruntime.kernels.parallel import rows_kernel
from envruntime.kernels.reset import ROOT_DRAWS
from envruntime.kernels.reward import action_rate_row, joint_limits_row
from envruntime.kernels.scalar import clip_scale, exp_kernel, observe
from envruntime.robots.g1 import HOME_KEYFRAME
from envruntime.tasks.g1_motion_tracking.clip import load_clip
from envruntime.tasks.g1_motion_tracking.motion import (
    SAMPLER_DRAWS,
    AdaptiveStartSampler,
    MotionReference,
    ResetNoise,
)
from envruntime.tasks.g1_motion_tracking.params import (
    GYRO_SENSOR,
    LIN_VEL_SENSOR,
    G1MotionTrackingCfg,
    sampling_params,
)


@rows_kernel
def _post_physics(
    sd: np.ndarray,
    qpos: np.ndarray,
    time_step: np.ndarray,
    body_pos: np.ndarray,
    body_quat: np.ndarray,
    body_lin_vel: np.ndarray,
    body_ang_vel: np.ndarray,
    anchor: int,
    cols: np.ndarray,
    end_effectors: np.ndarray,
    pos_rel: np.ndarray,
    quat_rel: np.ndarray,
    qadr: np.ndarray,
    soft_lo: np.ndarray,
    soft_hi: np.ndarray,
    action: np.ndarray,
    prev_action: np.ndarray,
    limits: np.ndarray,
    stds: np.ndarray,
    weights: np.ndarray,
    max_length: int,
    episode_length: np.ndarray,
    terminated: np.ndarray,
    truncated: np.ndarray,
    done: np.ndarray,
    reward: np.ndarray,
) -> None:
    """Counters, terminations and the weighted reward of every env, one pass.

    ``cols`` is (4, B): the first sensordata column of each body's pos, quat, linvel, angvel.
    """
    pos_cols, quat_cols, lin_cols, ang_cols = cols[0], cols[1], cols[2], cols[3]
    apos, aquat = pos_cols[anchor], quat_cols[anchor]
    for r in prange(episode_length.shape[0]):
        episode_length[r] += 1
        failed = (
            anchor_height_error_row(sd, apos, time_step, body_pos, anchor, r) > limits[0]
            or anchor_gravity_error_row(sd, aquat, time_step, body_quat, anchor, r) > limits[1]
            or body_height_error_row(sd, pos_cols, end_effectors, pos_rel, r) > limits[2]
        )
        terminated[r] = failed
        truncated[r] = episode_length[r] >= max_length and not failed
        done[r] = terminated[r] or truncated[r]
        total = 0.0
        total += (
            exp_kernel(anchor_pos_error_row(sd, apos, time_step, body_pos, anchor, r), stds[0]) * weights[0]
        )
        total += (
            exp_kernel(anchor_ori_error_row(sd, aquat, time_step, body_quat, anchor, r), stds[1]) * weights[1]
        )
        total += exp_kernel(body_pos_error_row(sd, pos_cols, pos_rel, r), stds[2]) * weights[2]
        total += exp_kernel(body_ori_error_row(sd, quat_cols, quat_rel, r), stds[3]) * weights[3]
        total += (
            exp_kernel(body_vel_error_row(sd, lin_cols, time_step, body_lin_vel, r), stds[4]) * weights[4]
        )
        total += (
            exp_kernel(body_vel_error_row(sd, ang_cols, time_step, body_ang_vel, r), stds[5]) * weights[5]
        )
        total += action_rate_row(action, prev_action, r) * weights[6]
        total += joint_limits_row(qpos, qadr, soft_lo, soft_hi, r) * weights[7]
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
    time_step: np.ndarray,
    ref_joint_pos: np.ndarray,
    ref_joint_vel: np.ndarray,
    body_pos: np.ndarray,
    body_quat: np.ndarray,
    anchor: int,
    cols: np.ndarray,
    imu_cols: np.ndarray,
    command: np.ndarray,
    pos_rel: np.ndarray,
    quat_rel: np.ndarray,
    qadr: np.ndarray,
    dadr: np.ndarray,
    default: np.ndarray,
    action: np.ndarray,
    noise_amp: np.ndarray,
) -> None:
    """Optionally the command update, then the actor and critic rows of ``rows``, one pass.

    Critic columns: command, ref anchor pos, ref anchor ori | body pos, body ori | lin vel,
    ang vel, joint pos, joint vel, actions; the actor has the same without the middle block.
    """
    pos_cols, quat_cols = cols[0], cols[1]
    apos, aquat = pos_cols[anchor], quat_cols[anchor]
    nb, nj, na, nc = pos_cols.shape[0], qadr.shape[0], action.shape[1], command.shape[1]
    head = nc + 9
    tail = head + 9 * nb
    for i in prange(rows.shape[0]):
        r = rows[i]
        raw = np.empty(critic.shape[1])  # per row: iterations run in parallel (hoisted per thread)
        if update_command:
            advance_motion_row(time_step, ref_joint_pos, ref_joint_vel, command, r)
            relative_body_poses_row(
                time_step, body_pos, body_quat, anchor, sd, apos, aquat, pos_rel, quat_rel, r
            )
        for k in range(nc):
            raw[k] = command[r, k]
        ref_anchor_pos_b_into(sd, apos, aquat, time_step, body_pos, anchor, r, raw, nc)
        ref_anchor_ori_b_into(sd, aquat, time_step, body_quat, anchor, r, raw, nc + 3)
        body_pos_b_into(sd, apos, aquat, pos_cols, r, raw, head)
        body_ori_b_into(sd, aquat, quat_cols, r, raw, head + 3 * nb)
        for a in range(3):
            raw[tail + a] = sd[r, imu_cols[0] + a]
            raw[tail + 3 + a] = sd[r, imu_cols[1] + a]
        c = tail + 6
        for j in range(nj):
            raw[c + j] = qpos[r, qadr[j]] - default[j]
            raw[c + nj + j] = qvel[r, dadr[j]]
        for k in range(na):
            raw[c + 2 * nj + k] = action[r, k]
        for c in range(raw.shape[0]):
            critic[i, c] = clip_scale(raw[c], -np.inf, np.inf, 1.0)
        for c in range(actor.shape[1]):
            src = c if c < head else c + tail - head
            actor[i, c] = observe(
                raw[src], noise_amp[c], noise_key, i * noise_amp.shape[0] + c, -np.inf, np.inf, 1.0
            )


class G1MotionTrackingDirectEnv(DirectEnv):
    """g1_motion_tracking without managers: the shared plumbing and the two fused kernels. The
    command's reset draws the start frames and writes the reference state of reset rows."""

    task = "g1_motion_tracking"
    cfg: G1MotionTrackingCfg

    def __init__(self, cfg: G1MotionTrackingCfg, backend: Backend) -> None:
        super().__init__(cfg, backend, HOME_KEYFRAME)
        info, n = backend.info, self.num_envs
        clip = load_clip(cfg.clip_path)
        self.ref = ref = MotionReference.resolve(info, clip, cfg.anchor_body, cfg.root_body, self.step_dt)
        self.noise = ResetNoise.from_ranges(cfg.pose_range, cfg.velocity_range, cfg.joint_position_range)
        self.sampler = AdaptiveStartSampler(clip.num_frames, clip.fps, **sampling_params(cfg))
        self.draws = SAMPLER_DRAWS + ROOT_DRAWS + ref.num_joints
        self.end_effectors = ref.body_ids(cfg.end_effectors)
        self.cols = np.stack([ref.pos_cols, ref.quat_cols, ref.lin_vel_cols, ref.ang_vel_cols])
        self.imu_cols = self.sensor_cols([LIN_VEL_SENSOR, GYRO_SENSOR])
        self.limits = np.array(
            [cfg.max_anchor_height_error, cfg.max_anchor_gravity_error, cfg.max_end_effector_height_error]
        )
        self.stds = np.array(
            [cfg.std_anchor_pos, cfg.std_anchor_ori, cfg.std_body_pos, cfg.std_body_ori, cfg.std_body_lin_vel,
             cfg.std_body_ang_vel]
        )  # fmt: skip
        self.weights = self.step_weights(
            [cfg.w_anchor_pos, cfg.w_anchor_ori, cfg.w_body_pos, cfg.w_body_ori, cfg.w_body_lin_vel,
             cfg.w_body_ang_vel, cfg.w_action_rate, cfg.w_joint_limits]
        )  # fmt: skip
        nj, nc, nb = len(self.qadr), 2 * ref.num_joints, len(ref.body_names)
        self.time_step = np.zeros(n, dtype=np.int64)
        self.command = np.zeros((n, nc))
        self.body_pos_rel, self.body_quat_rel = np.zeros((n, nb, 3)), np.zeros((n, nb, 4))
        noise_amp = np.repeat(
            [0.0, cfg.noise_anchor_pos, cfg.noise_anchor_ori, cfg.noise_lin_vel, cfg.noise_ang_vel,
             cfg.noise_joint_pos, cfg.noise_joint_vel, 0.0],
            [nc, 3, 6, 3, 3, nj, nj, info.nu],
        )  # fmt: skip
        self._init_observations(noise_amp, len(noise_amp) + 9 * nb)
        b = backend
        self._post_physics_args = kernel_args(
            _post_physics, sd=b.sensordata, qpos=b.qpos, time_step=self.time_step, body_pos=ref.body_pos,
            body_quat=ref.body_quat, body_lin_vel=ref.body_lin_vel, body_ang_vel=ref.body_ang_vel,
            anchor=ref.anchor, cols=self.cols, end_effectors=self.end_effectors, pos_rel=self.body_pos_rel,
            quat_rel=self.body_quat_rel, qadr=self.qadr, soft_lo=self.soft_lo, soft_hi=self.soft_hi,
            action=self.action, prev_action=self.prev_action, limits=self.limits, stds=self.stds,
            weights=self.weights, max_length=self.max_episode_length, episode_length=self.episode_length,
            terminated=self.terminated, truncated=self.truncated, done=self.done, reward=self.reward,
        )  # fmt: skip
        self._observe_args = kernel_args(
            _observe, leading=5, sd=b.sensordata, qpos=b.qpos, qvel=b.qvel, time_step=self.time_step,
            ref_joint_pos=ref.joint_pos, ref_joint_vel=ref.joint_vel, body_pos=ref.body_pos,
            body_quat=ref.body_quat, anchor=ref.anchor, cols=self.cols, imu_cols=self.imu_cols,
            command=self.command, pos_rel=self.body_pos_rel, quat_rel=self.body_quat_rel, qadr=self.qadr,
            dadr=self.dadr, default=self.joint_default, action=self.action, noise_amp=self.noise_amp,
        )  # fmt: skip

    def _post_physics(self) -> None:
        _post_physics(*self._post_physics_args)

    def _observe_rows(
        self, rows: np.ndarray, update_command: bool, noise_key: np.uint64, actor: np.ndarray,
        critic: np.ndarray,
    ) -> None:  # fmt: skip
        _observe(rows, update_command, noise_key, actor, critic, *self._observe_args)

    def _reset_commands(self, rows: np.ndarray) -> None:
        """Count the failures of ``rows``, draw their start frames and write the reference state."""
        k = rows.shape[0]
        u = self.rng.random((k, self.draws))
        self.sampler.sample(u[:, :SAMPLER_DRAWS], rows, self.terminated, self.time_step)
        qpos, qvel = self._staging.defaults(k)
        self.ref.stage_state(u[:, SAMPLER_DRAWS:], rows, self.time_step, self.noise, qpos, qvel)
        self.backend.reset(rows, qpos, qvel)

    def _advance_commands(self) -> None:
        self.sampler.decay()

    def _restart(self) -> None:
        self.sampler.clear()
