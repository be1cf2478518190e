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

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from envruntime.backends.base import ModelInfo
from envruntime.backends.reset_staging import ResetStaging
from envruntime.kernels.motion_command import (
    advance_motion,
    decay_failure_counts,
    record_failures,
    relative_body_poses,
    sample_start_frames,
    sampling_cdf,
)
from envruntime.kernels.motion_reset import stage_reference_state
from envruntime.kernels.reset import ROOT_DRAWS
from envruntime.motion.clip import MotionClip, load_clip

POSE_KEYS = ("x", "y", "z", "roll", "pitch", "yaw")
VELOCITY_KEYS = ("vx", "vy", "vz", "wx", "wy", "wz")
SAMPLER_DRAWS = 2


def _f64(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float64)


@dataclass(frozen=True)
class MotionReference:
    """A clip as float64 arrays and where the model keeps each of its bodies and joints."""

    num_frames: int
    body_names: tuple[str, ...]
    joint_pos: np.ndarray  # (T, J)
    joint_vel: np.ndarray
    body_pos: np.ndarray  # (T, B, 3)
    body_quat: np.ndarray  # (T, B, 4)
    body_lin_vel: np.ndarray  # (T, B, 3)
    body_ang_vel: np.ndarray
    anchor: int  # index of the anchor body in body_names
    root: int  # index of the free-joint body
    pos_cols: np.ndarray  # (B,) first sensordata column of each body's sensors
    quat_cols: np.ndarray
    lin_vel_cols: np.ndarray
    ang_vel_cols: np.ndarray
    qpos_adr: np.ndarray  # (J,) of each clip joint
    dof_adr: np.ndarray
    joint_lo: np.ndarray
    joint_hi: np.ndarray

    @classmethod
    def resolve(
        cls, info: ModelInfo, clip: MotionClip, anchor_body: str, root_body: str, step_dt: float
    ) -> MotionReference:
        """Match ``clip`` to the model; any mismatch is a ValueError naming it."""
        if abs(clip.fps * step_dt - 1.0) > 1e-6:
            raise ValueError(
                f"motion clip runs at {clip.fps:g} fps but the control step is {step_dt:g} s; "
                "one frame per control step is needed"
            )
        if info.nq - len(info.joint_names) != 7:
            raise ValueError(f"model {info.xml_path.name} needs a free base joint for motion tracking")
        for role, name in (("anchor_body", anchor_body), ("root_body", root_body)):
            if name not in clip.body_names:
                raise ValueError(
                    f"{role} {name!r} is not a clip body; clip bodies: {', '.join(clip.body_names)}"
                )
        missing = [j for j in clip.joint_names if j not in info.joint_names]
        if missing:
            raise ValueError(f"model {info.xml_path.name} lacks clip joints {missing}")
        joints = np.array([info.joint_names.index(j) for j in clip.joint_names], dtype=np.int64)

        def cols(kind: str) -> np.ndarray:
            return np.array([info.sensor_slice(f"{b}_{kind}").start for b in clip.body_names], dtype=np.int64)

        return cls(
            num_frames=clip.num_frames,
            body_names=clip.body_names,
            joint_pos=_f64(clip.joint_pos),
            joint_vel=_f64(clip.joint_vel),
            body_pos=_f64(clip.body_pos_w),
            body_quat=_f64(clip.body_quat_w),
            body_lin_vel=_f64(clip.body_lin_vel_w),
            body_ang_vel=_f64(clip.body_ang_vel_w),
            anchor=clip.body_names.index(anchor_body),
            root=clip.body_names.index(root_body),
            pos_cols=cols("pos"),
            quat_cols=cols("quat"),
            lin_vel_cols=cols("linvel"),
            ang_vel_cols=cols("angvel"),
            qpos_adr=info.joint_qpos_adr[joints].copy(),
            dof_adr=info.joint_dof_adr[joints].copy(),
            joint_lo=info.joint_range[joints, 0].copy(),
            joint_hi=info.joint_range[joints, 1].copy(),
        )

    @property
    def num_joints(self) -> int:
        return int(self.joint_pos.shape[1])

    @property
    def anchor_pos_col(self) -> int:
        """First sensordata column of the robot anchor's position."""
        return int(self.pos_cols[self.anchor])

    @property
    def anchor_quat_col(self) -> int:
        """First sensordata column of the robot anchor's orientation."""
        return int(self.quat_cols[self.anchor])

    def body_ids(self, names: tuple[str, ...] | list[str]) -> np.ndarray:
        """Indices of ``names`` among the clip bodies."""
        unknown = [n for n in names if n not in self.body_names]
        if unknown:
            raise ValueError(
                f"bodies {unknown} are not clip bodies; clip bodies: {', '.join(self.body_names)}"
            )
        return np.array([self.body_names.index(n) for n in names], dtype=np.int64)

    def stage_state(
        self, u: np.ndarray, rows: np.ndarray, time_step: np.ndarray, noise: ResetNoise, qpos: np.ndarray,
        qvel: np.ndarray,
    ) -> None:  # fmt: skip
        """Staged rows ``qpos``/``qvel`` (k, nq)/(k, nv) := the reference at each row's frame with
        ``noise``, from ``u`` (k, 12 + J)."""
        stage_reference_state(
            u, rows, time_step, self.root, self.body_pos, self.body_quat, self.body_lin_vel,
            self.body_ang_vel, self.joint_pos, self.joint_vel, self.qpos_adr, self.dof_adr, noise.lo,
            noise.hi, self.joint_lo, self.joint_hi, qpos, qvel,
        )  # fmt: skip


@dataclass(frozen=True)
class ResetNoise:
    """Uniform reset-noise bounds (13,): x, y, z, roll, pitch, yaw, vx, vy, vz, wx, wy, wz, joints."""

    lo: np.ndarray
    hi: np.ndarray

    @classmethod
    def from_ranges(
        cls,
        pose_range: dict[str, tuple[float, float]],
        velocity_range: dict[str, tuple[float, float]],
        joint_position_range: tuple[float, float],
    ) -> ResetNoise:
        """Bounds from named ranges (missing keys: no noise); unknown keys are a ValueError."""
        bounds = []
        for what, ranges, keys in (
            ("pose_range", pose_range, POSE_KEYS),
            ("velocity_range", velocity_range, VELOCITY_KEYS),
        ):
            unknown = sorted(set(ranges) - set(keys))
            if unknown:
                raise ValueError(f"unknown {what} keys {unknown}; valid: {', '.join(keys)}")
            bounds += [ranges.get(k, (0.0, 0.0)) for k in keys]
        bounds.append(joint_position_range)
        array = np.array(bounds, dtype=np.float64)
        if np.any(array[:, 0] > array[:, 1]):
            raise ValueError(f"reset noise ranges need lo <= hi, got {bounds}")
        return cls(array[:, 0].copy(), array[:, 1].copy())


class AdaptiveStartSampler:
    """Start frames drawn by time bin: ``bins = floor(T / (bin_s * fps)) + 1``; a bin's weight
    is its failure rate (an EMA with rate ``alpha`` of failures per control step) plus
    ``uniform_ratio / bins``, smoothed toward earlier bins with ``kernel_lambda ** i``
    (i < ``kernel_size``). BeyondMimic's defaults."""

    def __init__(
        self,
        num_frames: int,
        fps: float,
        bin_s: float = 1.0,
        uniform_ratio: float = 0.1,
        alpha: float = 0.001,
        kernel_size: int = 1,
        kernel_lambda: float = 0.8,
    ) -> None:
        if bin_s <= 0 or uniform_ratio <= 0 or not 0 < alpha <= 1 or kernel_size < 1 or kernel_lambda <= 0:
            raise ValueError(
                "adaptive sampling needs bin_s > 0, uniform_ratio > 0, 0 < alpha <= 1, kernel_size >= 1 and "
                f"kernel_lambda > 0, got {bin_s}, {uniform_ratio}, {alpha}, {kernel_size}, {kernel_lambda}"
            )
        self.num_frames = num_frames
        self.bins = int(num_frames // (bin_s * fps)) + 1
        self.uniform_ratio = float(uniform_ratio)
        self.alpha = float(alpha)
        kernel = kernel_lambda ** np.arange(kernel_size, dtype=np.float64)
        self.kernel = kernel / kernel.sum()
        self.new_failures = np.zeros(self.bins)
        self.failure_rate = np.zeros(self.bins)
        self.cdf = np.zeros(self.bins)

    def sample(self, u: np.ndarray, rows: np.ndarray, failed: np.ndarray, time_step: np.ndarray) -> None:
        """Count the failed rows of ``rows`` at their current frame, then draw new frames for
        ``rows`` into ``time_step`` from ``u`` (k, 2)."""
        record_failures(time_step, rows, failed, self.num_frames, self.new_failures)
        sampling_cdf(self.failure_rate, self.uniform_ratio, self.kernel, self.cdf)
        sample_start_frames(u, rows, self.cdf, self.num_frames, time_step)

    def decay(self) -> None:
        """Fold this step's failures into the failure rate (once per control step)."""
        decay_failure_counts(self.new_failures, self.failure_rate, self.alpha)

    def clear(self) -> None:
        """Forget every failure."""
        self.new_failures[:] = 0.0
        self.failure_rate[:] = 0.0


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
        bin_s: float = 1.0,
        uniform_ratio: float = 0.1,
        alpha: float = 0.001,
        kernel_size: int = 1,
        kernel_lambda: float = 0.8,
    ) -> None:
        clip = load_clip(clip_path)
        info = env.backend.info
        self._env = env
        self.reference = MotionReference.resolve(info, clip, anchor_body, root_body, env.step_dt)
        self.noise = ResetNoise.from_ranges(pose_range, velocity_range, joint_position_range)
        self.sampler = AdaptiveStartSampler(
            clip.num_frames, clip.fps, bin_s, uniform_ratio, alpha, kernel_size, kernel_lambda
        )
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
