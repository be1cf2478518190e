"""Motion-tracking term funcs (observations, rewards, terminations) over a ``MotionCommand``.

Each func is called once as ``func(env, **params)`` and returns the callable the manager runs
every step: one kernel of ``envruntime.kernels.motion_*`` over ``(N, ...)`` arrays.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from envruntime.kernels import motion_observation as obs
from envruntime.kernels import motion_reward as rew
from envruntime.kernels import motion_termination as term
from envruntime.tasks.g1_motion_tracking.motion_command import MotionCommand

RewardFn = Callable[[np.ndarray], None]
TerminationFn = Callable[[np.ndarray], None]


@dataclass
class _ObsTerm:
    dim: int
    fn: Callable[[np.ndarray, np.ndarray], None]

    def __call__(self, rows: np.ndarray, out: np.ndarray) -> None:
        self.fn(rows, out)


def _motion(env: Any, command: str) -> MotionCommand:
    motion = env.command_manager.term(command)
    if not isinstance(motion, MotionCommand):
        raise ValueError(f"command {command!r} is a {type(motion).__name__}, not a MotionCommand")
    return motion


# observations


def ref_anchor_pos_b(env: Any, command: str) -> _ObsTerm:
    """(3) the reference anchor's position in the robot anchor's frame."""
    m = _motion(env, command)
    ref = m.reference
    return _ObsTerm(3, lambda rows, out: obs.ref_anchor_pos_b(
        rows, env.backend.sensordata, ref.anchor_pos_col, ref.anchor_quat_col, m.time_step, ref.body_pos,
        ref.anchor, out,
    ))  # fmt: skip


def ref_anchor_ori_b(env: Any, command: str) -> _ObsTerm:
    """(6) the reference anchor's orientation in the robot anchor's frame (first two columns of
    the rotation matrix)."""
    m = _motion(env, command)
    ref = m.reference
    return _ObsTerm(6, lambda rows, out: obs.ref_anchor_ori_b(
        rows, env.backend.sensordata, ref.anchor_quat_col, m.time_step, ref.body_quat, ref.anchor, out,
    ))  # fmt: skip


def body_pos_b(env: Any, command: str) -> _ObsTerm:
    """(3 B) the robot's tracked bodies' positions in the robot anchor's frame."""
    ref = _motion(env, command).reference
    return _ObsTerm(3 * len(ref.pos_cols), lambda rows, out: obs.body_pos_b(
        rows, env.backend.sensordata, ref.anchor_pos_col, ref.anchor_quat_col, ref.pos_cols, out,
    ))  # fmt: skip


def body_ori_b(env: Any, command: str) -> _ObsTerm:
    """(6 B) the robot's tracked bodies' orientations in the robot anchor's frame."""
    ref = _motion(env, command).reference
    return _ObsTerm(6 * len(ref.quat_cols), lambda rows, out: obs.body_ori_b(
        rows, env.backend.sensordata, ref.anchor_quat_col, ref.quat_cols, out,
    ))  # fmt: skip


# rewards


def _anchor_tracking(env: Any, std: float, command: str, orientation: bool) -> RewardFn:
    m = _motion(env, command)
    ref = m.reference
    col, clip = (ref.anchor_quat_col, ref.body_quat) if orientation else (ref.anchor_pos_col, ref.body_pos)
    return lambda out: rew.anchor_tracking(
        env.backend.sensordata, col, m.time_step, clip, ref.anchor, orientation, std, out
    )


def ref_anchor_pos_tracking(env: Any, std: float, command: str) -> RewardFn:
    """Exp kernel of the world-frame anchor position error."""
    return _anchor_tracking(env, std, command, orientation=False)


def ref_anchor_ori_tracking(env: Any, std: float, command: str) -> RewardFn:
    """Exp kernel of the anchor orientation error angle."""
    return _anchor_tracking(env, std, command, orientation=True)


def body_pos_tracking(env: Any, std: float, command: str) -> RewardFn:
    """Exp kernel of the mean squared position error to the re-anchored reference bodies."""
    m = _motion(env, command)
    cols = m.reference.pos_cols
    return lambda out: rew.body_pose_tracking(env.backend.sensordata, cols, m.body_pos_rel, False, std, out)


def body_ori_tracking(env: Any, std: float, command: str) -> RewardFn:
    """Exp kernel of the mean squared orientation error to the re-anchored reference bodies."""
    m = _motion(env, command)
    cols = m.reference.quat_cols
    return lambda out: rew.body_pose_tracking(env.backend.sensordata, cols, m.body_quat_rel, True, std, out)


def body_lin_vel_tracking(env: Any, std: float, command: str) -> RewardFn:
    """Exp kernel of the mean squared world-frame linear velocity error of the bodies."""
    m = _motion(env, command)
    ref = m.reference
    return lambda out: rew.body_vel_tracking(
        env.backend.sensordata, ref.lin_vel_cols, m.time_step, ref.body_lin_vel, std, out
    )


def body_ang_vel_tracking(env: Any, std: float, command: str) -> RewardFn:
    """Exp kernel of the mean squared world-frame angular velocity error of the bodies."""
    m = _motion(env, command)
    ref = m.reference
    return lambda out: rew.body_vel_tracking(
        env.backend.sensordata, ref.ang_vel_cols, m.time_step, ref.body_ang_vel, std, out
    )


# terminations


def _anchor_error(env: Any, threshold: float, command: str, gravity: bool) -> TerminationFn:
    m = _motion(env, command)
    ref = m.reference
    col, clip = (ref.anchor_quat_col, ref.body_quat) if gravity else (ref.anchor_pos_col, ref.body_pos)
    return lambda out: term.anchor_error_exceeds(
        env.backend.sensordata, col, m.time_step, clip, ref.anchor, gravity, threshold, out
    )


def anchor_height_error(env: Any, threshold: float, command: str) -> TerminationFn:
    """The anchor's height differs from the reference's by more than ``threshold`` metres."""
    return _anchor_error(env, threshold, command, gravity=False)


def anchor_gravity_error(env: Any, threshold: float, command: str) -> TerminationFn:
    """The z components of gravity in the robot's and the reference's anchor frames differ by
    more than ``threshold``."""
    return _anchor_error(env, threshold, command, gravity=True)


def body_height_error(env: Any, threshold: float, bodies: tuple[str, ...], command: str) -> TerminationFn:
    """One of ``bodies`` is more than ``threshold`` metres above or below its re-anchored
    reference."""
    m = _motion(env, command)
    ids = m.reference.body_ids(bodies)
    cols = m.reference.pos_cols
    return lambda out: term.body_height_exceeds(
        env.backend.sensordata, cols, ids, m.body_pos_rel, threshold, out
    )
