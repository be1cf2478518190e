"""Names in the project's Unitree G1 model (``envruntime/assets/g1.xml``) that tasks rely on.

Joint and actuator order is the same (left leg, right leg, waist, left arm, right arm), so
``ctrl[:, i]`` drives ``JOINT_NAMES[i]``. All frame sensors are in the world frame. MuJoCo
reports ``framequat`` as (w, x, y, z); MotrixSim 0.10.1 reports it as (x, y, z, w), and
backends convert to (w, x, y, z) at their boundary (see ``envruntime.backends.base``).
"""

from __future__ import annotations

from typing import Literal

from envruntime.robots import ASSETS_DIR

G1_XML = ASSETS_DIR / "g1.xml"
"""The G1 on a flat floor (the model includes its scene), timestep 0.005 s."""

HOME_KEYFRAME = "home"
"""Knees-bent standing pose; its ``ctrl`` holds that pose."""

_LEG = ("hip_pitch", "hip_roll", "hip_yaw", "knee", "ankle_pitch", "ankle_roll")
_ARM = ("shoulder_pitch", "shoulder_roll", "shoulder_yaw", "elbow", "wrist_roll", "wrist_pitch", "wrist_yaw")
_WAIST = ("waist_yaw", "waist_roll", "waist_pitch")

ACTUATOR_NAMES: tuple[str, ...] = (
    *(f"left_{j}" for j in _LEG),
    *(f"right_{j}" for j in _LEG),
    *_WAIST,
    *(f"left_{j}" for j in _ARM),
    *(f"right_{j}" for j in _ARM),
)
"""The 29 position actuators in ctrl order."""
JOINT_NAMES: tuple[str, ...] = tuple(f"{a}_joint" for a in ACTUATOR_NAMES)
"""The 29 hinge joints in actuator (and qpos) order; the free joint is ``floating_base``."""

TRACKED_BODIES: tuple[str, ...] = (
    "pelvis",
    "left_hip_roll_link", "left_knee_link", "left_ankle_roll_link",
    "right_hip_roll_link", "right_knee_link", "right_ankle_roll_link",
    "torso_link",
    "left_shoulder_roll_link", "left_elbow_link", "left_wrist_yaw_link",
    "right_shoulder_roll_link", "right_elbow_link", "right_wrist_yaw_link",
)
"""The 14 bodies a motion-tracking task follows (BeyondMimic's set), in clip order."""
ANCHOR_BODY = "torso_link"
"""The body whose pose anchors the reference motion in motion tracking."""

FEET: tuple[str, ...] = ("left_foot", "right_foot")
"""Foot sole sites; the foot collision geoms carry the same names."""

BodySensorKind = Literal["pos", "quat", "linvel", "angvel"]
BODY_SENSOR_KINDS: tuple[str, ...] = ("pos", "quat", "linvel", "angvel")


def body_sensor(body: str, kind: BodySensorKind) -> str:
    """Name of the world-frame sensor ``kind`` (3 values, 4 for ``quat``) at a tracked body's origin."""
    if body not in TRACKED_BODIES:
        raise ValueError(f"{body!r} is not a tracked body; valid: {', '.join(TRACKED_BODIES)}")
    if kind not in BODY_SENSOR_KINDS:
        raise ValueError(f"unknown body sensor kind {kind!r}; valid: {', '.join(BODY_SENSOR_KINDS)}")
    return f"{body}_{kind}"


def imu_sensor(where: Literal["pelvis", "torso"], kind: Literal["gyro", "acc", "linvel", "quat"]) -> str:
    """Name of an IMU sensor: gyro/acc/linvel in the IMU's own frame, quat in the world frame."""
    if where not in ("pelvis", "torso") or kind not in ("gyro", "acc", "linvel", "quat"):
        raise ValueError(f"no IMU sensor {kind!r} on {where!r}; "
                         "IMUs: pelvis, torso; kinds: gyro, acc, linvel, quat")
    return f"imu_{where}_{kind}"


FOOT_TOUCH_SENSORS: tuple[str, ...] = tuple(f"{f}_touch" for f in FEET)
"""(1,) normal contact force on each sole [N]; > 0 means the foot is in contact."""
FOOT_POS_SENSORS: tuple[str, ...] = tuple(f"{f}_pos" for f in FEET)
"""(3,) world position of each sole centre (height above the floor = z) for clearance."""
FOOT_LINVEL_SENSORS: tuple[str, ...] = tuple(f"{f}_linvel" for f in FEET)
"""(3,) world velocity of each sole centre, for slip while in contact."""
SELF_COLLISION_TOUCH_SENSORS: tuple[str, ...] = (
    "left_hand_touch", "right_hand_touch", "left_shin_touch", "right_shin_touch",
)
"""(1,) each: contact force on hands (vs torso/pelvis) and shins (vs each other); their sum > 0
means a self-collision."""
