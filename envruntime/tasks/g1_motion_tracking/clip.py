"""The reference-motion clip format: one dataclass, saved as an ``.npz``.

Arrays (``T`` frames at ``fps``; bodies in ``body_names`` order, joints in ``joint_names`` order):

* ``joint_pos`` (T, J), ``joint_vel`` (T, J): hinge angles [rad] and rates [rad/s];
* ``body_pos_w`` (T, B, 3), ``body_quat_w`` (T, B, 4, w x y z): body-frame origins in the world;
* ``body_lin_vel_w`` (T, B, 3), ``body_ang_vel_w`` (T, B, 3): their world-frame velocities.

The clip loops: frame ``T`` would equal frame 0.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np

from envruntime.robots import ASSETS_DIR

G1_MOTION_NPZ = ASSETS_DIR / "g1_motion.npz"
"""The G1 reference clip (``python -m envruntime.tasks.g1_motion_tracking.generate_clip`` rewrites it)."""

_ARRAYS = ("joint_pos", "joint_vel", "body_pos_w", "body_quat_w", "body_lin_vel_w", "body_ang_vel_w")


@dataclass(frozen=True)
class MotionClip:
    """A looping whole-body reference motion. See the module docstring for shapes and units."""

    fps: float
    joint_names: tuple[str, ...]
    body_names: tuple[str, ...]
    joint_pos: np.ndarray
    joint_vel: np.ndarray
    body_pos_w: np.ndarray
    body_quat_w: np.ndarray
    body_lin_vel_w: np.ndarray
    body_ang_vel_w: np.ndarray

    def __post_init__(self) -> None:
        if not self.fps > 0:
            raise ValueError(f"motion clip fps must be > 0, got {self.fps}")
        t, j, b = self.joint_pos.shape[0], len(self.joint_names), len(self.body_names)
        expected = {
            "joint_pos": (t, j), "joint_vel": (t, j),
            "body_pos_w": (t, b, 3), "body_quat_w": (t, b, 4),
            "body_lin_vel_w": (t, b, 3), "body_ang_vel_w": (t, b, 3),
        }
        for name, shape in expected.items():
            actual = getattr(self, name).shape
            if actual != shape:
                raise ValueError(f"motion clip {name} has shape {actual}, expected {shape}")

    @property
    def num_frames(self) -> int:
        return int(self.joint_pos.shape[0])

    @property
    def duration_s(self) -> float:
        return self.num_frames / self.fps

    def save(self, path: str | Path) -> None:
        """Write the clip as a compressed ``.npz`` (arrays as float32)."""
        np.savez_compressed(
            Path(path),
            fps=np.float64(self.fps),
            joint_names=np.array(self.joint_names),
            body_names=np.array(self.body_names),
            **{name: np.asarray(getattr(self, name), dtype=np.float32) for name in _ARRAYS},
        )


def load_clip(path: str | Path) -> MotionClip:
    """Read a clip written by ``MotionClip.save``; a missing key or bad shape raises ValueError."""
    path = Path(path)
    with np.load(path, allow_pickle=False) as npz:
        required = [f.name for f in fields(MotionClip)]
        missing = [k for k in required if k not in npz.files]
        if missing:
            raise ValueError(f"motion clip {path} lacks {', '.join(missing)}")
        return MotionClip(
            fps=float(npz["fps"]),
            joint_names=tuple(str(n) for n in npz["joint_names"]),
            body_names=tuple(str(n) for n in npz["body_names"]),
            **{name: npz[name] for name in _ARRAYS},
        )

