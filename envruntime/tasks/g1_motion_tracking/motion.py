"""The reference motion as both variants use it: the clip matched to the model
(``MotionReference``), the reset noise (``ResetNoise``) and the failure-adaptive start-frame
sampler (``AdaptiveStartSampler``). Pure (numpy, kernels, the clip): the manager variant's
``MotionCommand`` (``motion_command``) and the direct variant both build on these.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from envruntime.backends.base import ModelInfo
from envruntime.kernels.motion_command import (
    decay_failure_counts,
    record_failures,
    sample_start_frames,
    sampling_cdf,
)
from envruntime.kernels.motion_reset import stage_reference_state
from envruntime.tasks.g1_motion_tracking.clip import MotionClip

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
