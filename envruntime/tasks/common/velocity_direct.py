"""VelocityDirectEnv: a DirectEnv with what the velocity-tracking direct variants share.

It owns the ``twist`` command state (resampled on reset and when its timer runs out; the
heading/standing update runs inside the subclass's fused observation kernel) and the reset of the
root pose/velocity and joint offsets, with the draws of the manager variant's ``reset_base`` and
``reset_joints`` events (``envruntime.tasks.common.manager_terms.velocity_events``).
"""

from __future__ import annotations

import math

import numpy as np

from envruntime.backends.base import Backend
from envruntime.envs.direct_base import DirectEnv
from envruntime.kernels.command import RESAMPLE_DRAWS, resample_velocity_command
from envruntime.kernels.reset import ROOT_DRAWS, sample_joint_offsets, sample_root_state
from envruntime.tasks.common.params import VelocityTaskCfg


class VelocityDirectEnv(DirectEnv):
    """See the module docstring."""

    cfg: VelocityTaskCfg

    def __init__(self, cfg: VelocityTaskCfg, backend: Backend, keyframe: str) -> None:
        super().__init__(cfg, backend, keyframe)
        n = self.num_envs
        self.cos_tilt = math.cos(math.radians(cfg.max_tilt_deg))
        self.cmd_ranges = np.array(
            [cfg.lin_vel_x, cfg.lin_vel_y, cfg.ang_vel_z, cfg.heading, cfg.command_resampling_s],
            dtype=np.float64,
        )
        self.command, self.heading, self.cmd_time_left = np.zeros((n, 3)), np.zeros(n), np.zeros(n)
        self.is_heading, self.is_standing = np.zeros(n, dtype=np.bool_), np.zeros(n, dtype=np.bool_)
        xy, v = cfg.reset_xy, cfg.reset_root_vel
        self.pose_lo = np.array([-xy, -xy, cfg.reset_z[0], 0.0, 0.0, -cfg.reset_yaw])
        self.pose_hi = np.array([xy, xy, cfg.reset_z[1], 0.0, 0.0, cfg.reset_yaw])
        self.vel_lo, self.vel_hi = np.full(6, -v), np.full(6, v)

    def proprioceptive_noise(self) -> np.ndarray:
        """Noise amplitudes of the policy columns: base lin vel 3, ang vel 3, gravity 3, joint
        pos, joint vel, last action, command 3 (``proprioceptive_terms``' layout)."""
        cfg, nj, nu = self.cfg, len(self.qadr), self.action_dim
        amp = (
            cfg.noise_lin_vel,
            cfg.noise_ang_vel,
            cfg.noise_gravity,
            cfg.noise_joint_pos,
            cfg.noise_joint_vel,
        )
        return np.repeat([*amp, 0.0, 0.0], [3, 3, 3, nj, nj, nu, 3])

    def _reset_state(self, rows: np.ndarray) -> None:
        k = rows.shape[0]
        qpos, qvel = self._staging.defaults(k)
        sample_root_state(
            self.rng.random((k, ROOT_DRAWS)), self.pose_lo, self.pose_hi, self.vel_lo, self.vel_hi, qpos, qvel
        )
        off = self.cfg.reset_joint_offset
        sample_joint_offsets(
            self.rng.random((k, len(self.qadr))), self.qadr, -off, off, self.joint_lo, self.joint_hi, qpos
        )
        self.backend.reset(rows, qpos, qvel)

    def _reset_commands(self, rows: np.ndarray) -> None:
        resample_velocity_command(
            self.rng.random((rows.shape[0], RESAMPLE_DRAWS)), rows, self.cmd_ranges,
            self.cfg.rel_heading_envs, self.cfg.rel_standing_envs, self.command, self.heading,
            self.is_heading, self.is_standing, self.cmd_time_left,
        )  # fmt: skip

    def _advance_commands(self) -> None:
        self.cmd_time_left -= self.step_dt
        expired = np.flatnonzero(self.cmd_time_left <= 0.0)
        if expired.shape[0]:
            self._reset_commands(expired)
