"""Generate the G1 reference clip deterministically:
``python -m envruntime.tasks.g1_motion_tracking.generate_clip``.

The motion is a loop of in-place stepping (alternate knee lifts with the foot kept level)
over a slow squat, with counter-swinging arms, a waist twist and wrist motion: smooth
periodic joint trajectories around the model's ``home`` keyframe, all inside the joint ranges.
Body poses come from MuJoCo's forward kinematics (``mj_kinematics``) with the pelvis upright,
placed each frame so that the midpoint of the soles stays at x = y = 0 (the pelvis sways over
the feet) and the lowest sole corner touches the floor. The clip is kinematic, not dynamically
consistent: the stance sole slides a little (~0.1 m/s) and replaying it open-loop on the
servos does not balance; tracking it is the policy's job.

Velocities are central finite differences over the loop (frame -1 is frame T-1):
``v[t] = (x[t+1] - x[t-1]) * fps / 2``; angular velocities use the world-frame rotation
``q[t+1] * conj(q[t-1])`` as a rotation vector over ``2 / fps`` seconds.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

import mujoco
import numpy as np

from envruntime.robots.g1 import FEET, G1_XML, HOME_KEYFRAME, JOINT_NAMES, TRACKED_BODIES
from envruntime.tasks.g1_motion_tracking.clip import G1_MOTION_NPZ, MotionClip


@dataclass(frozen=True)
class MotionSpec:
    """Timing and amplitudes [rad] of the generated motion."""

    fps: float = 50.0
    seconds: float = 5.0  # one squat cycle; a whole number of stepping cycles
    step_period_s: float = 1.0  # a left and a right step
    step_lift: float = 0.35  # extra hip flexion of the swing leg at the top of a step
    squat_depth: float = 0.2  # extra hip flexion of both legs at the bottom of the squat
    sway: float = 0.08  # lateral weight shift through hip/ankle roll
    arm_swing: float = 0.3
    waist_twist: float = 0.25

    def __post_init__(self) -> None:
        if not (self.fps > 0 and self.seconds > 0 and self.step_period_s > 0):
            raise ValueError(f"fps, seconds and step_period_s must be > 0, got {self.fps}, "
                             f"{self.seconds}, {self.step_period_s}")
        if not _is_whole(self.seconds * self.fps):
            raise ValueError(f"seconds * fps must be a whole number of frames, got {self.seconds * self.fps}")
        if not _is_whole(self.seconds / self.step_period_s):
            raise ValueError(f"seconds ({self.seconds}) must be a whole number of step periods "
                             f"({self.step_period_s}) so that the clip loops")

    @property
    def num_frames(self) -> int:
        return round(self.seconds * self.fps)


def _is_whole(x: float) -> bool:
    return abs(x - round(x)) < 1e-9 and round(x) >= 1


def joint_trajectory(spec: MotionSpec, home: np.ndarray) -> np.ndarray:
    """(T, 29) joint angles: the motion's offsets added to the ``home`` angles (29,)."""
    t = np.arange(spec.num_frames) / spec.fps
    phase = 2 * np.pi * t / spec.step_period_s
    s = np.sin(phase)
    squat = 0.5 * (1 - np.cos(2 * np.pi * t / spec.seconds))
    lift = {"left": np.where(s > 0, s * s, 0.0), "right": np.where(s < 0, s * s, 0.0)}
    side_sign = {"left": 1.0, "right": -1.0}
    offsets: dict[str, np.ndarray] = {
        "waist_yaw_joint": spec.waist_twist * s,
        "waist_roll_joint": 0.05 * s,
        "waist_pitch_joint": 0.15 * squat,
    }
    for side, sign in side_sign.items():
        flex = spec.step_lift * lift[side] + spec.squat_depth * squat
        offsets[f"{side}_hip_pitch_joint"] = -flex
        offsets[f"{side}_knee_joint"] = 2 * flex
        offsets[f"{side}_ankle_pitch_joint"] = -flex  # keeps the sole level
        offsets[f"{side}_hip_roll_joint"] = spec.sway * s
        offsets[f"{side}_hip_yaw_joint"] = sign * 0.08 * s  # toes turn with the waist twist
        offsets[f"{side}_ankle_roll_joint"] = -spec.sway * s
        offsets[f"{side}_shoulder_pitch_joint"] = sign * spec.arm_swing * s  # against the same-side leg
        offsets[f"{side}_shoulder_roll_joint"] = sign * 0.1 * squat
        offsets[f"{side}_shoulder_yaw_joint"] = sign * 0.1 * s
        offsets[f"{side}_elbow_joint"] = sign * 0.25 * s  # bends more as the arm swings forward
        offsets[f"{side}_wrist_roll_joint"] = 0.2 * np.sin(2 * phase)
        offsets[f"{side}_wrist_pitch_joint"] = 0.15 * s
        offsets[f"{side}_wrist_yaw_joint"] = 0.1 * np.cos(phase)
    joint_pos = np.tile(home, (spec.num_frames, 1))
    for name, offset in offsets.items():
        joint_pos[:, JOINT_NAMES.index(name)] += offset
    return joint_pos


def _lowest_sole_z(model: mujoco.MjModel, data: mujoco.MjData, foot_geoms: list[int]) -> float:
    """Lowest z of the foot boxes' corners at the current kinematics."""
    corners = np.array(np.meshgrid([-1, 1], [-1, 1], [-1, 1])).reshape(3, -1).T
    lowest = np.inf
    for g in foot_geoms:
        z_axis_row = data.geom_xmat[g].reshape(3, 3)[2]  # world z of each geom-frame axis
        lowest = min(lowest, data.geom_xpos[g, 2] + np.min((corners * model.geom_size[g]) @ z_axis_row))
    return float(lowest)


def body_kinematics(model: mujoco.MjModel, joint_pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """World positions (T, B, 3) and quaternions (T, B, 4) of TRACKED_BODIES with the pelvis
    upright and placed each frame so that the midpoint of the soles stays at x = y = 0 and the
    lowest sole corner is at z = 0."""
    data = mujoco.MjData(model)
    bodies = [model.body(b).id for b in TRACKED_BODIES]
    foot_geoms = [model.geom(f).id for f in FEET]
    soles = [model.site(f).id for f in FEET]
    qadr = [model.jnt_qposadr[model.joint(j).id] for j in JOINT_NAMES]
    pos = np.empty((len(joint_pos), len(bodies), 3))
    quat = np.empty((len(joint_pos), len(bodies), 4))
    for t, q in enumerate(joint_pos):
        data.qpos[:] = 0.0
        data.qpos[3] = 1.0
        data.qpos[qadr] = q
        mujoco.mj_kinematics(model, data)
        shift = np.zeros(3)
        shift[:2] = -data.site_xpos[soles, :2].mean(axis=0)
        shift[2] = -_lowest_sole_z(model, data, foot_geoms)
        pos[t] = data.xpos[bodies] + shift
        quat[t] = data.xquat[bodies]
    return pos, quat


def loop_central_difference(x: np.ndarray, fps: float) -> np.ndarray:
    """d/dt of a looping sequence along axis 0."""
    return (np.roll(x, -1, axis=0) - np.roll(x, 1, axis=0)) * (fps / 2)


def _quat_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    aw, av = a[..., :1], a[..., 1:]
    bw, bv = b[..., :1], b[..., 1:]
    return np.concatenate([aw * bw - np.sum(av * bv, -1, keepdims=True),
                           aw * bv + bw * av + np.cross(av, bv)], -1)


def loop_angular_velocity(quat: np.ndarray, fps: float) -> np.ndarray:
    """World-frame angular velocity (T, ..., 3) of looping (T, ..., 4) w-x-y-z quaternions."""
    prev_conj = np.roll(quat, 1, axis=0) * np.array([1.0, -1.0, -1.0, -1.0])
    rel = _quat_mul(np.roll(quat, -1, axis=0), prev_conj)
    rel *= np.where(rel[..., :1] < 0, -1.0, 1.0)  # shortest rotation
    sin_half = np.linalg.norm(rel[..., 1:], axis=-1, keepdims=True)
    angle = 2 * np.arctan2(sin_half, rel[..., :1])
    axis = rel[..., 1:] / np.maximum(sin_half, 1e-12)
    return axis * angle * (fps / 2)


def generate_clip(spec: MotionSpec | None = None, xml_path: str | Path = G1_XML) -> MotionClip:
    """Build the reference clip of ``spec`` on the G1 model at ``xml_path``."""
    spec = spec or MotionSpec()
    model = mujoco.MjModel.from_xml_path(str(xml_path))
    home_qpos = model.key(HOME_KEYFRAME).qpos
    home = np.array([home_qpos[model.jnt_qposadr[model.joint(j).id]] for j in JOINT_NAMES])
    joint_pos = joint_trajectory(spec, home)
    body_pos, body_quat = body_kinematics(model, joint_pos)
    return MotionClip(
        fps=spec.fps,
        joint_names=JOINT_NAMES,
        body_names=TRACKED_BODIES,
        joint_pos=joint_pos,
        joint_vel=loop_central_difference(joint_pos, spec.fps),
        body_pos_w=body_pos,
        body_quat_w=body_quat,
        body_lin_vel_w=loop_central_difference(body_pos, spec.fps),
        body_ang_vel_w=loop_angular_velocity(body_quat, spec.fps),
    )


def main(argv: list[str] | None = None) -> int:
    """CLI: write the clip; exit 2 on invalid arguments."""
    parser = argparse.ArgumentParser(prog="python -m envruntime.tasks.g1_motion_tracking.generate_clip",
                                     description="Write the G1 reference motion clip (.npz).")
    parser.add_argument("--out", type=Path, default=G1_MOTION_NPZ, help="npz to write (default: %(default)s)")
    parser.add_argument("--fps", type=float, default=MotionSpec.fps)
    parser.add_argument("--seconds", type=float, default=MotionSpec.seconds)
    args = parser.parse_args(argv)
    try:
        spec = MotionSpec(fps=args.fps, seconds=args.seconds)
    except ValueError as err:
        parser.exit(2, f"error: {err}\n")
    if not args.out.parent.is_dir():
        parser.exit(2, f"error: --out directory {args.out.parent} does not exist\n")
    clip = generate_clip(spec)
    clip.save(args.out)
    print(f"wrote {args.out}: {clip.num_frames} frames at {clip.fps:g} fps ({clip.duration_s:g} s), "
          f"{len(clip.joint_names)} joints, {len(clip.body_names)} bodies")
    return 0


if __name__ == "__main__":
    sys.exit(main())
