"""Reference quaternion maths for the kernel tests: plain NumPy, (w, x, y, z) order."""

from __future__ import annotations

import numpy as np


def unit_quats(rng: np.random.Generator, *shape: int) -> np.ndarray:
    """Random unit quaternions of shape ``(*shape, 4)``."""
    q = rng.standard_normal((*shape, 4))
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def rotation_matrix(q: np.ndarray) -> np.ndarray:
    """The 3x3 rotation matrix of one unit quaternion."""
    w, x, y, z = q
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])  # fmt: skip
