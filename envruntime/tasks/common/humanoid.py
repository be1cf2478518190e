"""Construction-time helpers for humanoids that both variants of a task call, so they resolve the
same numbers: per-joint stds from name patterns, the model's mass lumped onto tracked bodies.
Pure (numpy, mujoco); the manager terms that use them are in ``humanoid_terms``.
"""

from __future__ import annotations

import re
from pathlib import Path

import mujoco
import numpy as np


def joint_stds(joint_names: tuple[str, ...] | list[str], std: dict[str, float]) -> np.ndarray:
    """Each joint's std: the value of the first pattern of ``std`` that fully matches its name."""
    out = []
    for name in joint_names:
        match = next((v for pattern, v in std.items() if re.fullmatch(pattern, name)), None)
        if match is None:
            raise ValueError(f"no std pattern matches joint {name!r}; patterns: {', '.join(std)}")
        if match <= 0:
            raise ValueError(f"std of joint {name!r} must be positive, got {match}")
        out.append(float(match))
    return np.array(out)


def lumped_masses(xml_path: str | Path, bodies: tuple[str, ...] | list[str]) -> np.ndarray:
    """The model's mass lumped onto ``bodies``: each body's mass goes to itself if listed, else to
    its nearest listed ancestor (bodies with none, e.g. the world, are left out)."""
    model = mujoco.MjModel.from_xml_path(str(xml_path))
    index = {}
    for i, name in enumerate(bodies):
        body_id = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, name)
        if body_id < 0:
            raise KeyError(f"model {Path(xml_path).name} has no body {name!r}")
        index[body_id] = i
    mass = np.zeros(len(bodies))
    for b in range(1, model.nbody):
        a = b
        while a != 0 and a not in index:
            a = int(model.body_parentid[a])
        if a != 0:
            mass[index[a]] += model.body_mass[b]
    return mass
