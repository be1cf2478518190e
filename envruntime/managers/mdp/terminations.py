"""Termination term funcs: each returns a callable filling (N,) bool flags."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from envruntime.kernels import termination as k
from envruntime.managers.mdp.lookup import sensor_col

TerminationFn = Callable[[np.ndarray], None]


def time_out(env: Any) -> TerminationFn:
    """The episode lasted ``env.max_episode_length`` control steps."""
    return lambda out: k.time_out(env.episode_length, env.max_episode_length, out)


def bad_orientation(env: Any, limit_angle: float, quat_sensor: str = "orientation") -> TerminationFn:
    """The body tilted more than ``limit_angle`` radians from upright."""
    col, cos_limit = sensor_col(env, quat_sensor), math.cos(limit_angle)
    return lambda out: k.tilt_exceeds(env.backend.sensordata, col, cos_limit, out)
