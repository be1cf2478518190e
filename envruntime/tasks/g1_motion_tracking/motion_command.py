"""The motion command (BeyondMimic style): a looping reference clip that each env tracks from an
adaptively sampled start frame.

Per env it keeps ``time_step`` (the reference frame), ``command`` (N, 2J: reference joint
positions then velocities of that frame) and the reference bodies re-anchored on the robot:
``body_pos_rel`` (N, B, 3), ``body_quat_rel`` (N, B, 4) (see
``envruntime.kernels.motion_command.relative_body_poses_row``).

* ``reset(rows)``: records the rows whose episode ended in a terminal state (a failure) in the
  time bin they reached, draws their start frames (failure-weighted bins mixed with a uniform
  share), and writes the reference state there, with noise, to the backend.
* ``compute``: moves every env one frame on (one frame per control step; the clip loops) and
  updates the failure statistics; ``post_compute`` (the command manager's second stage, timed on
  its own) re-anchors the reference bodies.
* ``restart``: forgets the failure statistics (a new seeded run).

The command writes the full state of reset rows, so its task's event manager writes none
(``ManagerBasedEnvCfg.events_write_reset_state=False``).

Random numbers: ``reset`` draws one (k, 2 + 12 + J) block: bin and within-bin draws, 12 root
draws, one per joint. ``compute`` draws none.

The model needs a free base, ``framepos``/``framequat``/``framelinvel``/``frameangvel`` sensors
named ``<body>_pos``/``_quat``/``_linvel``/``_angvel`` at the origin of every clip body, and
every clip joint.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from envruntime.backends.reset_staging import ResetStaging
from envruntime.kernels.motion_command import advance_motion, relative_body_poses
from envruntime.kernels.reset import ROOT_DRAWS
from envruntime.tasks.g1_motion_tracking.clip import load_clip
from envruntime.tasks.g1_motion_tracking.motion import (
    SAMPLER_DRAWS,
    AdaptiveStartSampler,
    MotionReference,
    ResetNoise,
)


class MotionCommand:
    """See the module docstring. Built by a ``CommandTermCfg`` as ``MotionCommand(env, **params)``."""

    def __init__(
        self,
        env: Any,
        clip_path: str | Path,
        anchor_body: str,
        root_body: str,
        pose_range: dict[str, tuple[float, float]],
        velocity_range: dict[str, tuple[float, float]],
        joint_position_range: tuple[float, float],
        sampling: dict[str, float],
    ) -> None:
        clip = load_clip(clip_path)
        info = env.backend.info
        self._env = env
        self.reference = MotionReference.resolve(info, clip, anchor_body, root_body, env.step_dt)
        self.noise = ResetNoise.from_ranges(pose_range, velocity_range, joint_position_range)
        self.sampler = AdaptiveStartSampler(clip.num_frames, clip.fps, **sampling)
        self.draws = SAMPLER_DRAWS + ROOT_DRAWS + self.reference.num_joints
        n, b = env.num_envs, len(clip.body_names)
        self.time_step = np.zeros(n, dtype=np.int64)
        self.command = np.zeros((n, 2 * self.reference.num_joints))
        self.body_pos_rel = np.zeros((n, b, 3))
        self.body_quat_rel = np.zeros((n, b, 4))
        self._staging = ResetStaging(env.default_qpos, env.default_qvel, n)
        self._failed = env.termination_manager.terminated

    def reset(self, rows: np.ndarray, rng: np.random.Generator) -> None:
        """Count failures, draw start frames and write the reference state of ``rows``."""
        k = rows.shape[0]
        u = rng.random((k, self.draws))
        self.sampler.sample(u[:, :SAMPLER_DRAWS], rows, self._failed, self.time_step)
        qpos, qvel = self._staging.defaults(k)
        self.reference.stage_state(u[:, SAMPLER_DRAWS:], rows, self.time_step, self.noise, qpos, qvel)
        self._env.backend.reset(rows, qpos, qvel)

    def compute(self, dt: float, rng: np.random.Generator) -> None:
        """Next frame of every env, then fold this step's failures into the statistics."""
        ref = self.reference
        advance_motion(self.time_step, ref.joint_pos, ref.joint_vel, self.command)
        self.sampler.decay()

    def post_compute(self) -> None:
        """Re-anchor the reference bodies of the current frame on the robot."""
        ref = self.reference
        relative_body_poses(
            self.time_step, ref.body_pos, ref.body_quat, ref.anchor, self._env.backend.sensordata,
            ref.anchor_pos_col, ref.anchor_quat_col, self.body_pos_rel, self.body_quat_rel,
        )  # fmt: skip

    def restart(self) -> None:
        """Forget the failure statistics (a new seeded run)."""
        self.sampler.clear()
