"""The direct variant: g1_motion_tracking hand-fused into two Numba kernels.

Same semantics, parameters (``G1MotionTrackingCfg``), step order and random-number order as the
manager variant (see ``envruntime.envs.manager_based`` and ``envruntime.managers.motion_command``):

* ``_post_physics``: counters, the four terminations and the weighted reward, one pass over envs;
* ``_observe``: (optionally) the command's next frame and re-anchoring, then the actor and
  critic observations, one pass over the rows.

The row formulas come from ``envruntime.kernels`` (the functions the manager terms call), which
is what makes both variants agree bit for bit. The command's next frame and re-anchoring run
inside ``_observe``, after the interval pushes rather than before them as in the manager
variant: a push changes only velocities, and those stages read only the clip and body poses.
"""

from __future__ import annotations

import time

import numpy as np
from numba import njit

from envruntime.backends.base import Backend
from envruntime.kernels.action import joint_position_targets
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
from envruntime.kernels.reward import action_rate_row, joint_limits_row
from envruntime.kernels.scalar import exp_kernel, observe
from envruntime.managers.motion_command import (
    SAMPLER_DRAWS,
    AdaptiveStartSampler,
    MotionReference,
    ResetNoise,
)
from envruntime.motion.clip import load_clip
from envruntime.motion.g1_names import HOME_KEYFRAME
from envruntime.tasks.g1_motion_tracking.config import GYRO_SENSOR, LIN_VEL_SENSOR, G1MotionTrackingCfg
from envruntime.vecenv import ENV_PHASES, StepResult


@njit(cache=True)
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
    for r in range(episode_length.shape[0]):
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


@njit(cache=True)
def _observe(
    rows: np.ndarray,
    update_command: bool,
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
    uniforms: np.ndarray,
    noise_amp: np.ndarray,
    actor: np.ndarray,
    critic: np.ndarray,
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
    raw = np.empty(critic.shape[1])
    for i in range(rows.shape[0]):
        r = rows[i]
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
            critic[i, c] = observe(raw[c], 0.0, 0.0, -np.inf, np.inf, 1.0)
        for c in range(actor.shape[1]):
            src = c if c < head else c + tail - head
            actor[i, c] = observe(raw[src], noise_amp[c], uniforms[i, c], -np.inf, np.inf, 1.0)


class G1MotionTrackingDirectEnv:
    """g1_motion_tracking without managers: preallocated arrays and the two fused kernels."""

    task = "g1_motion_tracking"
    variant = "direct"
    manager_names: tuple[str, ...] = ()

    def __init__(self, cfg: G1MotionTrackingCfg, backend: Backend, num_envs: int) -> None:
        if num_envs != backend.num_envs:
            raise ValueError(f"num_envs {num_envs} does not match the backend's {backend.num_envs}")
        info = backend.info
        if HOME_KEYFRAME not in info.keyframes:
            raise ValueError(f"model {info.xml_path.name} has no keyframe {HOME_KEYFRAME!r}")
        n = num_envs
        self.cfg, self.backend, self.num_envs = cfg, backend, n
        self.step_dt = info.timestep * cfg.decimation
        self.max_episode_length = max(1, round(cfg.episode_length_s / self.step_dt))
        self.default_qpos, self.default_qvel = (a.astype(np.float64) for a in info.keyframes[HOME_KEYFRAME])
        clip = load_clip(cfg.clip_path)
        self.ref = ref = MotionReference.resolve(info, clip, cfg.anchor_body, cfg.root_body, self.step_dt)
        self.noise = ResetNoise.from_ranges(cfg.pose_range, cfg.velocity_range, cfg.joint_position_range)
        self.sampler = AdaptiveStartSampler(
            clip.num_frames,
            clip.fps,
            cfg.bin_s,
            cfg.uniform_ratio,
            cfg.alpha,
            cfg.kernel_size,
            cfg.kernel_lambda,
        )
        self.draws = SAMPLER_DRAWS + 12 + ref.num_joints
        self.end_effectors = ref.body_ids(cfg.end_effectors)
        self.cols = np.stack([ref.pos_cols, ref.quat_cols, ref.lin_vel_cols, ref.ang_vel_cols])
        self.imu_cols = np.array(
            [info.sensor_slice(LIN_VEL_SENSOR).start, info.sensor_slice(GYRO_SENSOR).start], dtype=np.int64
        )
        nj = len(info.joint_names)
        self.qadr, self.dadr = info.joint_qpos_adr.copy(), info.joint_dof_adr.copy()
        self.joint_default = self.default_qpos[self.qadr]
        mid = info.joint_range.mean(axis=1)
        half = 0.5 * cfg.joint_soft_ratio * (info.joint_range[:, 1] - info.joint_range[:, 0])
        self.soft_lo, self.soft_hi = mid - half, mid + half
        self.ctrl_offset = self.default_qpos[info.joint_qpos_adr[info.actuator_joint]]
        self.ctrl_lo, self.ctrl_hi = info.ctrl_range[:, 0].copy(), info.ctrl_range[:, 1].copy()
        self.limits = np.array(
            [cfg.max_anchor_height_error, cfg.max_anchor_gravity_error, cfg.max_end_effector_height_error]
        )
        self.stds = np.array(
            [cfg.std_anchor_pos, cfg.std_anchor_ori, cfg.std_body_pos, cfg.std_body_ori, cfg.std_body_lin_vel,
             cfg.std_body_ang_vel]
        )  # fmt: skip
        self.weights = self.step_dt * np.array(
            [cfg.w_anchor_pos, cfg.w_anchor_ori, cfg.w_body_pos, cfg.w_body_ori, cfg.w_body_lin_vel,
             cfg.w_body_ang_vel, cfg.w_action_rate, cfg.w_joint_limits]
        )  # fmt: skip
        nc, nb = 2 * ref.num_joints, len(ref.body_names)
        self.noise_amp = np.repeat(
            [0.0, cfg.noise_anchor_pos, cfg.noise_anchor_ori, cfg.noise_lin_vel, cfg.noise_ang_vel,
             cfg.noise_joint_pos, cfg.noise_joint_vel, 0.0],
            [nc, 3, 6, 3, 3, nj, nj, info.nu],
        )  # fmt: skip
        self.noisy = bool(np.any(self.noise_amp))
        actor_dim = len(self.noise_amp)
        critic_dim = actor_dim + 9 * nb

        self.action_dim = info.nu
        self.obs_dims = {"actor": actor_dim, "critic": critic_dim}
        self.rng = np.random.default_rng(0)
        self.rows = np.arange(n, dtype=np.int64)
        self.action = np.zeros((n, info.nu), dtype=np.float32)
        self.prev_action = np.zeros_like(self.action)
        self.ctrl = np.zeros((n, info.nu), dtype=backend.dtype)
        self.episode_length = np.zeros(n, dtype=np.int64)
        self.terminated, self.truncated, self.done = (np.zeros(n, dtype=np.bool_) for _ in range(3))
        self.reward = np.zeros(n, dtype=np.float32)
        self.time_step = np.zeros(n, dtype=np.int64)
        self.command = np.zeros((n, nc))
        self.body_pos_rel, self.body_quat_rel = np.zeros((n, nb, 3)), np.zeros((n, nb, 4))
        self.push_time_left = np.zeros(n)
        self.uniforms = np.zeros((n, actor_dim))
        self.obs = {
            "actor": np.zeros((n, actor_dim), dtype=np.float32),
            "critic": np.zeros((n, critic_dim), dtype=np.float32),
        }
        self.final_obs = {g: np.zeros_like(o) for g, o in self.obs.items()}
        self._final_rows = {g: np.zeros_like(o) for g, o in self.obs.items()}
        self._qpos, self._qvel = np.zeros((n, info.nq)), np.zeros((n, info.nv))
        self.timings: dict[str, float] = dict.fromkeys(ENV_PHASES, 0.0)

    def _observe(self, rows: np.ndarray, update_command: bool, actor: np.ndarray, critic: np.ndarray) -> None:
        uniforms = self.uniforms[: rows.shape[0]]
        if self.noisy:
            self.rng.random(out=uniforms)
        b, ref = self.backend, self.ref
        _observe(
            rows,
            update_command,
            b.sensordata,
            b.qpos,
            b.qvel,
            self.time_step,
            ref.joint_pos,
            ref.joint_vel,
            ref.body_pos,
            ref.body_quat,
            ref.anchor,
            self.cols,
            self.imu_cols,
            self.command,
            self.body_pos_rel,
            self.body_quat_rel,
            self.qadr,
            self.dadr,
            self.joint_default,
            self.action,
            uniforms,
            self.noise_amp,
            actor,
            critic,
        )

    def _draw_push_timers(self, rows: np.ndarray) -> None:
        lo, hi = self.cfg.push_interval_s
        self.push_time_left[rows] = lo + (hi - lo) * self.rng.random(rows.shape[0])

    def _reset_rows(self, rows: np.ndarray) -> None:
        k = rows.shape[0]
        self._draw_push_timers(rows)
        u = self.rng.random((k, self.draws))
        self.sampler.sample(u[:, :SAMPLER_DRAWS], rows, self.terminated, self.time_step)
        qpos, qvel = self._qpos[:k], self._qvel[:k]
        qpos[...] = self.default_qpos
        qvel[...] = self.default_qvel
        self.ref.stage_state(u[:, SAMPLER_DRAWS:], rows, self.time_step, self.noise, qpos, qvel)
        self.backend.reset(rows, qpos, qvel)
        self.action[rows] = 0.0
        self.prev_action[rows] = 0.0
        self.episode_length[rows] = 0

    def _push(self) -> None:
        self.push_time_left -= self.step_dt
        pushed = np.flatnonzero(self.push_time_left <= 0.0)
        if pushed.shape[0]:
            lo, hi = -self.cfg.push_vel, self.cfg.push_vel
            self.backend.apply_body_velocity_kick(
                pushed, lo + (hi - lo) * self.rng.random((pushed.shape[0], 2))
            )
            self._draw_push_timers(pushed)

    def reset(self, seed: int) -> dict[str, np.ndarray]:
        """Seed the generator, forget the failure statistics, reset every env and return the
        first observation."""
        self.rng = np.random.default_rng(seed)
        self.sampler.clear()
        self.terminated[:] = False
        self._reset_rows(self.rows)
        self.sampler.decay()
        self._observe(self.rows, True, self.obs["actor"], self.obs["critic"])
        return self.obs

    def step(self, action: np.ndarray) -> StepResult:
        """Advance one control step (the manager variant's order, fused)."""
        if action.shape != self.action.shape:
            raise ValueError(f"action must have shape {self.action.shape}, got {action.shape}")
        b, ref, t = self.backend, self.ref, self.timings
        t0 = time.perf_counter()
        self.prev_action[...] = self.action
        self.action[...] = action
        cfg = self.cfg
        joint_position_targets(
            self.action,
            cfg.action_clip,
            cfg.action_scale,
            self.ctrl_offset,
            self.ctrl_lo,
            self.ctrl_hi,
            self.ctrl,
        )
        t1 = time.perf_counter()
        b.step(self.ctrl, cfg.decimation)
        t2 = time.perf_counter()
        _post_physics(
            b.sensordata,
            b.qpos,
            self.time_step,
            ref.body_pos,
            ref.body_quat,
            ref.body_lin_vel,
            ref.body_ang_vel,
            ref.anchor,
            self.cols,
            self.end_effectors,
            self.body_pos_rel,
            self.body_quat_rel,
            self.qadr,
            self.soft_lo,
            self.soft_hi,
            self.action,
            self.prev_action,
            self.limits,
            self.stds,
            self.weights,
            self.max_episode_length,
            self.episode_length,
            self.terminated,
            self.truncated,
            self.done,
            self.reward,
        )
        t3 = time.perf_counter()
        done_rows = np.flatnonzero(self.done)
        k = done_rows.shape[0]
        if k:
            self._observe(done_rows, False, self._final_rows["actor"][:k], self._final_rows["critic"][:k])
            self._reset_rows(done_rows)
        t4 = time.perf_counter()
        self.sampler.decay()
        self._push()
        self._observe(self.rows, True, self.obs["actor"], self.obs["critic"])
        t5 = time.perf_counter()
        for g, o in self.obs.items():
            np.copyto(self.final_obs[g], o)
            self.final_obs[g][done_rows] = self._final_rows[g][:k]
        t6 = time.perf_counter()
        t["apply_action_ms"] = (t1 - t0) * 1e3
        t["physics_ms"] = b.timings["physics_ms"]
        t["d2h_ms"] = b.timings["d2h_ms"]
        t["update_state_ms"] = ((t3 - t2) + (t5 - t4)) * 1e3
        t["reset_done_ms"] = ((t4 - t3) + (t6 - t5)) * 1e3
        return StepResult(
            obs=self.obs,
            reward=self.reward,
            terminated=self.terminated,
            truncated=self.truncated,
            final_obs=self.final_obs,
        )

    def close(self) -> None:
        """Release the backend."""
        self.backend.close()
