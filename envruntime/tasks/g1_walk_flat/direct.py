"""The direct variant: g1_walk_flat hand-fused into two Numba kernels around the action kernel.

Same semantics, parameters (``G1WalkCfg``), step order and random-number order as the manager
variant (see ``envruntime.envs.manager_based``), with the per-step work fused:

* ``_post_physics``: counters, terminations and the weighted sum of the 11 rewards, one pass;
* ``_observe``: heading/standing command update, foot air time, actor and critic rows, one pass.

Every per-row formula is a function of ``envruntime.kernels`` that the manager terms call too,
evaluated in the same order with the same random numbers, so both variants agree bit for bit.
The heading update runs inside ``_observe``, after the interval pushes rather than before them
as in the manager variant: a push changes only velocities, so the yaw it reads is the same.
"""

from __future__ import annotations

import math
import time

import numpy as np
from numba import njit

from envruntime.backends.base import Backend
from envruntime.kernels.action import joint_position_targets
from envruntime.kernels.command import RESAMPLE_DRAWS, resample_velocity_command, update_velocity_command_row
from envruntime.kernels.humanoid import (
    angular_momentum_proxy_row,
    count_above_row,
    force_feature,
    posture_per_joint_row,
    squared_sum_row,
    update_air_time_row,
)
from envruntime.kernels.reset import sample_joint_offsets, sample_root_state
from envruntime.kernels.reward import (
    action_rate_row,
    ang_vel_z_tracking_row,
    foot_clearance_row,
    foot_slip_row,
    joint_limits_row,
    lin_vel_xy_tracking_row,
    upright_row,
)
from envruntime.kernels.scalar import observe, projected_gravity
from envruntime.kernels.termination import tilt_exceeds_row
from envruntime.managers.mdp.humanoid import joint_stds, lumped_masses
from envruntime.motion.g1_names import HOME_KEYFRAME
from envruntime.tasks.g1_walk_flat import config as c
from envruntime.vecenv import ENV_PHASES, StepResult

NUM_FEET = 2
POLICY_DIM = 99  # lin vel 3, ang vel 3, gravity 3, joint pos 29, joint vel 29, last action 29, command 3
CRITIC_DIM = POLICY_DIM + 4 * NUM_FEET  # + foot height, air time, contact, contact force


@njit(cache=True)
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
    for r in range(episode_length.shape[0]):
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


@njit(cache=True)
def _observe(
    rows: np.ndarray,
    update_command: bool,
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
    uniforms: np.ndarray,
    noise_amp: np.ndarray,
    actor: np.ndarray,
    critic: np.ndarray,
) -> None:
    """Optionally the command update, then foot air time and actor and critic rows for ``rows``."""
    vel, gyro, base_quat = cols[0], cols[1], cols[2]
    z_cols, touch_cols = feet[0], feet[2]
    stiffness, ang_lo, ang_hi, contact, dt = (
        cmd_params[0],
        cmd_params[1],
        cmd_params[2],
        cmd_params[3],
        cmd_params[4],
    )
    inf = np.inf
    nj = qadr.shape[0]
    na = action.shape[1]
    nf = z_cols.shape[0]
    raw = np.empty(POLICY_DIM)
    for i in range(rows.shape[0]):
        r = rows[i]
        if update_command:
            update_velocity_command_row(
                sd, base_quat, stiffness, ang_lo, ang_hi, command, heading, is_heading, is_standing, r
            )
        for a in range(3):
            raw[a] = sd[r, vel + a]
            raw[3 + a] = sd[r, gyro + a]
        gx, gy, gz = projected_gravity(
            sd[r, base_quat], sd[r, base_quat + 1], sd[r, base_quat + 2], sd[r, base_quat + 3]
        )
        raw[6] = gx
        raw[7] = gy
        raw[8] = gz
        for j in range(nj):
            raw[9 + j] = qpos[r, qadr[j]] - default[j]
            raw[9 + nj + j] = qvel[r, dadr[j]]
        for k in range(na):
            raw[9 + 2 * nj + k] = action[r, k]
        for a in range(3):
            raw[9 + 2 * nj + na + a] = command[r, a]
        for col in range(POLICY_DIM):
            actor[i, col] = observe(raw[col], noise_amp[col], uniforms[i, col], -inf, inf, 1.0)
            critic[i, col] = observe(raw[col], 0.0, 0.0, -inf, inf, 1.0)
        update_air_time_row(sd, touch_cols, contact, dt, episode_length, air_stamp, air_time, r)
        for f in range(nf):
            flag = 1.0 if sd[r, touch_cols[f]] > contact else 0.0
            critic[i, POLICY_DIM + f] = observe(sd[r, z_cols[f]], 0.0, 0.0, -inf, inf, 1.0)
            critic[i, POLICY_DIM + nf + f] = observe(air_time[r, f], 0.0, 0.0, -inf, inf, 1.0)
            critic[i, POLICY_DIM + 2 * nf + f] = observe(flag, 0.0, 0.0, -inf, inf, 1.0)
            critic[i, POLICY_DIM + 3 * nf + f] = observe(
                force_feature(sd[r, touch_cols[f]]), 0.0, 0.0, -inf, inf, 1.0
            )


class G1WalkDirectEnv:
    """g1_walk_flat without managers: preallocated arrays and the fused kernels."""

    task = "g1_walk_flat"
    variant = "direct"
    manager_names: tuple[str, ...] = ()

    def __init__(self, cfg: c.G1WalkCfg, backend: Backend, num_envs: int) -> None:
        if num_envs != backend.num_envs:
            raise ValueError(f"num_envs {num_envs} does not match the backend's {backend.num_envs}")
        info = backend.info
        if HOME_KEYFRAME not in info.keyframes:
            raise ValueError(f"model {info.xml_path.name} has no keyframe {HOME_KEYFRAME!r}")
        n, nj = num_envs, len(info.joint_names)
        if nj != info.nu or POLICY_DIM != 9 + 3 * nj + 3:
            raise ValueError(f"model {info.xml_path.name} is not the 29-joint G1 this task expects")
        self.cfg, self.backend, self.num_envs = cfg, backend, n
        self.step_dt = info.timestep * cfg.decimation
        self.max_episode_length = max(1, round(cfg.episode_length_s / self.step_dt))
        self.default_qpos, self.default_qvel = (a.astype(np.float64) for a in info.keyframes[HOME_KEYFRAME])
        self.qadr, self.dadr = info.joint_qpos_adr.copy(), info.joint_dof_adr.copy()
        self.joint_default = self.default_qpos[self.qadr]
        self.joint_lo, self.joint_hi = info.joint_range[:, 0].copy(), info.joint_range[:, 1].copy()
        mid = info.joint_range.mean(axis=1)
        half = 0.5 * cfg.joint_soft_ratio * (self.joint_hi - self.joint_lo)
        self.soft_lo, self.soft_hi = mid - half, mid + half
        self.inv_std = 1.0 / joint_stds(info.joint_names, cfg.posture_std)
        self.ctrl_offset = self.default_qpos[info.joint_qpos_adr[info.actuator_joint]]
        self.ctrl_lo, self.ctrl_hi = info.ctrl_range[:, 0].copy(), info.ctrl_range[:, 1].copy()

        def cols(names: list[str], offset: int = 0) -> np.ndarray:
            return np.array([info.sensor_slice(s).start + offset for s in names], dtype=np.int64)

        self.cols = cols([c.BASE_LINVEL, c.BASE_GYRO, c.BASE_QUAT, c.TORSO_QUAT])
        self.feet = np.stack([cols(c.FOOT_POS, 2), cols(c.FOOT_VEL), cols(c.FOOT_TOUCH)])
        self.ang_cols = info.sensor_slice(c.TORSO_ANGVEL).start + np.arange(2, dtype=np.int64)  # wx, wy
        self.self_cols = cols(c.SELF_TOUCH)
        self.body_cols = np.stack([cols(c.MOMENTUM_POS), cols(c.MOMENTUM_VEL)])
        self.body_mass = lumped_masses(info.xml_path, c.MOMENTUM_BODIES)
        self.shape = np.array(
            [
                cfg.lin_vel_std,
                cfg.ang_vel_std,
                cfg.upright_std,
                cfg.swing_height,
                cfg.contact_threshold,
                cfg.self_collision_threshold,
            ]
        )
        self.weights = self.step_dt * np.array(
            [
                cfg.w_track_lin_vel,
                cfg.w_track_ang_vel,
                cfg.w_upright,
                cfg.w_posture,
                cfg.w_body_ang_vel,
                cfg.w_angular_momentum,
                cfg.w_self_collisions,
                cfg.w_action_rate,
                cfg.w_joint_limits,
                cfg.w_foot_clearance,
                cfg.w_foot_slip,
            ]
        )
        self.cos_tilt = math.cos(math.radians(cfg.max_tilt_deg))
        self.cmd_ranges = np.array(
            [cfg.lin_vel_x, cfg.lin_vel_y, cfg.ang_vel_z, cfg.heading, cfg.command_resampling_s],
            dtype=np.float64,
        )
        self.cmd_params = np.array(
            [cfg.heading_stiffness, cfg.ang_vel_z[0], cfg.ang_vel_z[1], cfg.contact_threshold, self.step_dt]
        )
        noise = (cfg.noise_lin_vel, cfg.noise_ang_vel, cfg.noise_gravity, cfg.noise_joint_pos,
                 cfg.noise_joint_vel)  # fmt: skip
        self.noise_amp = np.repeat([*noise, 0.0, 0.0], [3, 3, 3, nj, nj, info.nu, 3])
        self.noisy = bool(np.any(self.noise_amp))
        xy, v = cfg.reset_xy, cfg.reset_root_vel
        self.pose_lo = np.array([-xy, -xy, cfg.reset_z[0], 0.0, 0.0, -cfg.reset_yaw])
        self.pose_hi = np.array([xy, xy, cfg.reset_z[1], 0.0, 0.0, cfg.reset_yaw])
        self.vel_lo, self.vel_hi = np.full(6, -v), np.full(6, v)

        self.action_dim = info.nu
        self.obs_dims = {"actor": POLICY_DIM, "critic": CRITIC_DIM}
        self.rng = np.random.default_rng(0)
        self.rows = np.arange(n, dtype=np.int64)
        self.action = np.zeros((n, info.nu), dtype=np.float32)
        self.prev_action = np.zeros_like(self.action)
        self.ctrl = np.zeros((n, info.nu), dtype=backend.dtype)
        self.episode_length = np.zeros(n, dtype=np.int64)
        self.terminated, self.truncated, self.done = (np.zeros(n, dtype=np.bool_) for _ in range(3))
        self.reward = np.zeros(n, dtype=np.float32)
        self.command, self.heading, self.cmd_time_left = np.zeros((n, 3)), np.zeros(n), np.zeros(n)
        self.is_heading, self.is_standing = np.zeros(n, dtype=np.bool_), np.zeros(n, dtype=np.bool_)
        self.push_time_left = np.zeros(n)
        self.air_stamp = np.full(n, -1, dtype=np.int64)
        self.air_time = np.zeros((n, NUM_FEET))
        self.uniforms = np.zeros((n, POLICY_DIM))
        self.obs = {
            "actor": np.zeros((n, POLICY_DIM), dtype=np.float32),
            "critic": np.zeros((n, CRITIC_DIM), dtype=np.float32),
        }
        self.final_obs = {g: np.zeros_like(o) for g, o in self.obs.items()}
        self._final_rows = {g: np.zeros_like(o) for g, o in self.obs.items()}
        self._qpos, self._qvel = np.zeros((n, info.nq)), np.zeros((n, info.nv))
        self.timings: dict[str, float] = dict.fromkeys(ENV_PHASES, 0.0)

    def _observe(self, rows: np.ndarray, update_command: bool, actor: np.ndarray, critic: np.ndarray) -> None:
        uniforms = self.uniforms[: rows.shape[0]]
        if self.noisy:
            self.rng.random(out=uniforms)
        b = self.backend
        _observe(
            rows,
            update_command,
            b.sensordata,
            b.qpos,
            b.qvel,
            self.cols,
            self.feet,
            self.qadr,
            self.dadr,
            self.joint_default,
            self.action,
            self.command,
            self.heading,
            self.is_heading,
            self.is_standing,
            self.cmd_params,
            self.episode_length,
            self.air_stamp,
            self.air_time,
            uniforms,
            self.noise_amp,
            actor,
            critic,
        )

    def _resample_commands(self, rows: np.ndarray) -> None:
        resample_velocity_command(
            self.rng.random((rows.shape[0], RESAMPLE_DRAWS)),
            rows,
            self.cmd_ranges,
            self.cfg.rel_heading_envs,
            self.cfg.rel_standing_envs,
            self.command,
            self.heading,
            self.is_heading,
            self.is_standing,
            self.cmd_time_left,
        )

    def _draw_push_timers(self, rows: np.ndarray) -> None:
        lo, hi = self.cfg.push_interval_s
        self.push_time_left[rows] = lo + (hi - lo) * self.rng.random(rows.shape[0])

    def _reset_rows(self, rows: np.ndarray) -> None:
        k = rows.shape[0]
        qpos, qvel = self._qpos[:k], self._qvel[:k]
        qpos[...] = self.default_qpos
        qvel[...] = self.default_qvel
        sample_root_state(
            self.rng.random((k, 12)), self.pose_lo, self.pose_hi, self.vel_lo, self.vel_hi, qpos, qvel
        )
        off = self.cfg.reset_joint_offset
        sample_joint_offsets(
            self.rng.random((k, len(self.qadr))), self.qadr, -off, off, self.joint_lo, self.joint_hi, qpos
        )
        self.backend.reset(rows, qpos, qvel)
        self._draw_push_timers(rows)
        self.action[rows] = 0.0
        self.prev_action[rows] = 0.0
        self._resample_commands(rows)
        self.episode_length[rows] = 0

    def _count_down_commands(self) -> None:
        self.cmd_time_left -= self.step_dt
        expired = np.flatnonzero(self.cmd_time_left <= 0.0)
        if expired.shape[0]:
            self._resample_commands(expired)

    def _push(self) -> None:
        self.push_time_left -= self.step_dt
        pushed = np.flatnonzero(self.push_time_left <= 0.0)
        if pushed.shape[0]:
            lo, hi = -self.cfg.push_vel, self.cfg.push_vel
            dvel = lo + (hi - lo) * self.rng.random((pushed.shape[0], 2))
            self.backend.apply_body_velocity_kick(pushed, dvel)
            self._draw_push_timers(pushed)

    def reset(self, seed: int) -> dict[str, np.ndarray]:
        """Seed the generator, reset every env and return the first observation."""
        self.rng = np.random.default_rng(seed)
        self._reset_rows(self.rows)
        self._count_down_commands()
        self._observe(self.rows, True, self.obs["actor"], self.obs["critic"])
        return self.obs

    def step(self, action: np.ndarray) -> StepResult:
        """Advance one control step (the manager variant's order, fused)."""
        if action.shape != self.action.shape:
            raise ValueError(f"action must have shape {self.action.shape}, got {action.shape}")
        b, t, cfg = self.backend, self.timings, self.cfg
        t0 = time.perf_counter()
        np.copyto(self.prev_action, self.action)
        np.copyto(self.action, action)
        joint_position_targets(
            self.action, cfg.action_clip, cfg.action_scale, self.ctrl_offset, self.ctrl_lo, self.ctrl_hi,
            self.ctrl,
        )
        t1 = time.perf_counter()
        b.step(self.ctrl, cfg.decimation)
        t2 = time.perf_counter()
        _post_physics(
            b.sensordata,
            b.qpos,
            self.cols,
            self.feet,
            self.ang_cols,
            self.self_cols,
            self.body_cols,
            self.body_mass,
            self.qadr,
            self.joint_default,
            self.inv_std,
            self.soft_lo,
            self.soft_hi,
            self.action,
            self.prev_action,
            self.command,
            self.shape,
            self.weights,
            self.max_episode_length,
            self.cos_tilt,
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
        self._count_down_commands()
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
