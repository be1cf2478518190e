"""Names in the project's Unitree Go2 model (``envruntime/assets/go2.xml``) that tasks rely on.

Legs in ``LEGS`` order (front left, front right, rear left, rear right). The base sensors sit on
the ``imu`` site; the foot sensors on the foot sites ``<leg>_foot``.
"""

from __future__ import annotations

from envruntime.robots import ASSETS_DIR

GO2_SCENE_XML = ASSETS_DIR / "go2_scene.xml"
"""The Go2 on a flat floor (includes ``go2.xml``): the scene the Go2 tasks load."""

HOME_KEYFRAME = "home"
"""Standing pose; its ``ctrl`` holds that pose."""

LEGS: tuple[str, ...] = ("FL", "FR", "RL", "RR")

BASE_LINVEL_SENSOR = "local_linvel"
"""(3,) velocimeter: the base's linear velocity in the IMU frame."""
BASE_GYRO_SENSOR = "gyro"
"""(3,) the base's angular velocity in the IMU frame."""
BASE_QUAT_SENSOR = "orientation"
"""(4,) framequat of the IMU site in the world frame."""

FOOT_POS_SENSORS: tuple[str, ...] = tuple(f"{leg}_foot_pos" for leg in LEGS)
"""(3,) world position of each foot site."""
FOOT_LINVEL_SENSORS: tuple[str, ...] = tuple(f"{leg}_foot_linvel" for leg in LEGS)
"""(3,) world linear velocity of each foot site."""
FOOT_TOUCH_SENSORS: tuple[str, ...] = tuple(f"{leg}_touch" for leg in LEGS)
"""(1,) normal contact force on each foot [N]."""
