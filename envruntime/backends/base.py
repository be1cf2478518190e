"""The backend protocol: what every physics backend gives the env runtime.

A backend simulates ``num_envs`` copies of one MJCF model and exposes their state as contiguous
``(N, ...)`` NumPy arrays that the managers read without per-env Python loops.

Conventions every backend keeps at its boundary (whatever its engine uses inside):

* quaternions are scalar-first ``(w, x, y, z)``, as in MuJoCo;
* state arrays are ``float64`` (MuJoCo) or ``float32`` (MotrixSim, MJWarp): ``dtype`` says which,
  and consumers must accept both;
* ``qpos``/``qvel``/``sensordata`` are current after ``step`` and ``reset`` (sensors evaluated at
  the new state, velocity stage), so managers read them directly;
* body poses, velocities and contacts come from the MJCF's sensors (``framepos``, ``framequat``,
  ``framelinvel``, ``frameangvel``, ``touch``/``contact``), read with ``sensor(name)``;
* ``timings`` holds the milliseconds of the last ``step``: ``physics_ms`` (substeps, device
  synchronise included), ``d2h_ms`` (device-to-host refresh; 0.0 on CPU backends) and, where a
  backend uploads controls to a device, ``h2d_ms`` (that upload; the env counts it inside
  ``apply_action_ms``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

import mujoco
import numpy as np


@dataclass(frozen=True)
class ModelInfo:
    """Engine-independent facts about a model, read once from MuJoCo's compile of the MJCF.

    Every backend (MuJoCo or not) builds one so that tasks find joints, actuators, sensors and
    keyframes by name the same way everywhere.
    """

    xml_path: Path
    timestep: float
    nq: int
    nv: int
    nu: int
    joint_names: tuple[str, ...]  # hinge/slide joints only (the free joint is excluded)
    joint_qpos_adr: np.ndarray  # (nj,) qpos address of each named joint
    joint_dof_adr: np.ndarray  # (nj,) qvel address of each named joint
    joint_range: np.ndarray  # (nj, 2)
    actuator_names: tuple[str, ...]
    actuator_joint: np.ndarray  # (nu,) index into joint_names of the joint each actuator drives
    ctrl_range: np.ndarray  # (nu, 2)
    sensor_names: tuple[str, ...]
    sensor_adr: np.ndarray  # (nsensor,) start in sensordata
    sensor_dim: np.ndarray  # (nsensor,)
    nsensordata: int
    keyframes: dict[str, tuple[np.ndarray, np.ndarray]]  # name -> (qpos, qvel)

    @classmethod
    def from_model(cls, model: mujoco.MjModel, xml_path: Path) -> ModelInfo:
        """Read the metadata of an already compiled model."""
        hinge_like = [
            j for j in range(model.njnt)
            if int(model.jnt_type[j]) in (mujoco.mjtJoint.mjJNT_HINGE, mujoco.mjtJoint.mjJNT_SLIDE)
        ]
        joint_names = tuple(mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_JOINT, j) for j in hinge_like)
        joint_index = {j: i for i, j in enumerate(hinge_like)}
        actuator_joint = np.array([joint_index.get(int(model.actuator_trnid[a, 0]), -1)
                                   for a in range(model.nu)], dtype=np.int64)
        keyframes = {
            mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_KEY, k): (
                model.key_qpos[k].copy(), model.key_qvel[k].copy())
            for k in range(model.nkey)
        }
        return cls(
            xml_path=xml_path,
            timestep=float(model.opt.timestep),
            nq=model.nq, nv=model.nv, nu=model.nu,
            joint_names=joint_names,
            joint_qpos_adr=np.array([model.jnt_qposadr[j] for j in hinge_like], dtype=np.int64),
            joint_dof_adr=np.array([model.jnt_dofadr[j] for j in hinge_like], dtype=np.int64),
            joint_range=np.array([model.jnt_range[j] for j in hinge_like]).reshape(-1, 2),
            actuator_names=tuple(mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_ACTUATOR, a)
                                 for a in range(model.nu)),
            actuator_joint=actuator_joint,
            ctrl_range=model.actuator_ctrlrange.copy().reshape(-1, 2),
            sensor_names=tuple(mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_SENSOR, s)
                               for s in range(model.nsensor)),
            sensor_adr=model.sensor_adr.copy(),
            sensor_dim=model.sensor_dim.copy(),
            nsensordata=model.nsensordata,
            keyframes=keyframes,
        )

    def sensor_slice(self, name: str) -> slice:
        """The columns of ``sensordata`` that hold sensor ``name``."""
        try:
            s = self.sensor_names.index(name)
        except ValueError:
            raise KeyError(f"model {self.xml_path.name} has no sensor {name!r}") from None
        start = int(self.sensor_adr[s])
        return slice(start, start + int(self.sensor_dim[s]))


@runtime_checkable
class Backend(Protocol):
    """A batch of ``num_envs`` simulations of one model. See the module docstring."""

    name: str  # "mujoco" | "motrix" | "mjwarp": what the bench's --sim names
    info: ModelInfo
    num_envs: int
    dtype: np.dtype
    qpos: np.ndarray  # (N, nq), current state, read-only for consumers (use reset to write)
    qvel: np.ndarray  # (N, nv)
    sensordata: np.ndarray  # (N, nsensordata)
    timings: dict[str, float]  # of the last step: physics_ms, d2h_ms

    def sensor(self, name: str) -> np.ndarray:
        """(N, dim) view of one sensor's columns of ``sensordata``."""
        ...

    def step(self, ctrl: np.ndarray, substeps: int) -> None:
        """Apply ``ctrl`` (N, nu) and advance every env by ``substeps`` physics steps."""
        ...

    def reset(self, env_ids: np.ndarray, qpos: np.ndarray, qvel: np.ndarray) -> None:
        """Set rows ``env_ids`` to (len, nq)/(len, nv) state and make their derived values current.

        Rows not in ``env_ids`` are left exactly as they were.
        """
        ...

    def apply_body_velocity_kick(self, env_ids: np.ndarray, dvel_xy: np.ndarray) -> None:
        """Add (len, 2) world-frame xy velocity to the free base of rows ``env_ids`` (pushes)."""
        ...

    def synchronize(self) -> None:
        """Wait until every piece of work queued on the backend's device is done (a no-op on CPU
        backends, whose steps return when their work is done): a lockstep block ends with it."""
        ...

    def close(self) -> None:
        """Release threads and device memory."""
        ...
