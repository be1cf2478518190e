"""Name lookups shared by the term funcs (construction time only)."""

from __future__ import annotations

from typing import Any

import numpy as np


def sensor_col(env: Any, name: str, offset: int = 0) -> int:
    """Column of ``sensordata`` holding component ``offset`` of sensor ``name``."""
    return env.backend.info.sensor_slice(name).start + offset


def sensor_cols(env: Any, names: tuple[str, ...] | list[str], offset: int = 0) -> np.ndarray:
    """Columns of component ``offset`` of each sensor in ``names``."""
    return np.array([sensor_col(env, n, offset) for n in names], dtype=np.int64)


def joint_ids(env: Any, joints: tuple[str, ...] | list[str] | None) -> np.ndarray:
    """Indices into ``info.joint_names`` of ``joints`` (all hinge/slide joints when None)."""
    names = env.backend.info.joint_names
    if joints is None:
        return np.arange(len(names), dtype=np.int64)
    missing = [j for j in joints if j not in names]
    if missing:
        raise KeyError(f"unknown joints {missing}; model joints: {', '.join(names)}")
    return np.array([names.index(j) for j in joints], dtype=np.int64)
