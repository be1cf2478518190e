"""MuJoCo CPU backend: N simulations in one persistent ``mujoco.batch.Batch`` thread pool.

State (``qpos``, ``qvel``) is exposed as read-only views of the batch's state rows: no copies,
each row's fields contiguous, rows ``nstate`` apart. ``sensordata`` is the batch's output
buffer, refreshed by every ``step``/``reset``/kick for the rows it touched. Steps finish with
``stage=mjSTAGE_VEL``, so position- and velocity-stage sensors (frame poses, velocimeter, gyro)
are current at the new state; acceleration-stage sensors (accelerometer, touch) are those of the
last substep, as with ``mj_step``.
"""

from __future__ import annotations

import time
from pathlib import Path

import mujoco
import mujoco.batch
import numpy as np

from envruntime.backends import default_threads
from envruntime.backends.base import ModelInfo

_VEL = mujoco.mjtStage.mjSTAGE_VEL
_NONE = mujoco.mjtStage.mjSTAGE_NONE


def _read_only(array: np.ndarray) -> np.ndarray:
    view = array.view()
    view.flags.writeable = False
    return view


class MujocoBackend:
    """``num_envs`` copies of the MJCF at ``xml_path`` stepped on ``threads`` threads (default:
    the CPUs in this process's affinity mask)."""

    name = "mujoco"

    def __init__(self, xml_path: str | Path, num_envs: int, threads: int | None = None) -> None:
        if num_envs < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        threads = default_threads() if threads is None else threads
        if threads < 1:
            raise ValueError(f"threads must be >= 1, got {threads}")
        path = Path(xml_path)
        if not path.is_file():
            raise FileNotFoundError(f"MJCF not found: {path}")
        self.model = mujoco.MjModel.from_xml_path(str(path))
        self.info = ModelInfo.from_model(self.model, path)
        self.num_envs = num_envs
        self.threads = threads
        self.dtype = np.dtype(np.float64)
        self._batch = mujoco.batch.Batch(self.model, nsim=num_envs, nthread=threads, persistent=True)
        self._qpos = self._batch.bind("qpos")
        self._qvel = self._batch.bind("qvel")
        self._ctrl = self._batch.bind("ctrl")
        self.sensordata = self._batch.bind("sensordata")
        self.qpos = _read_only(self._qpos)
        self.qvel = _read_only(self._qvel)
        self.timings = {"physics_ms": 0.0, "d2h_ms": 0.0}
        self._free_base = self.model.njnt > 0 and self.model.jnt_type[0] == mujoco.mjtJoint.mjJNT_FREE
        self._batch.reset(stage=_VEL)

    def sensor(self, name: str) -> np.ndarray:
        """(N, dim) view of sensor ``name``'s columns of ``sensordata``."""
        return self.sensordata[:, self.info.sensor_slice(name)]

    def step(self, ctrl: np.ndarray, substeps: int) -> None:
        """Write ``ctrl`` (N, nu) and run ``substeps`` mj_steps per env, then the velocity stage."""
        if ctrl.shape != self._ctrl.shape:
            raise ValueError(f"ctrl must have shape {self._ctrl.shape}, got {ctrl.shape}")
        if substeps < 1:
            raise ValueError(f"substeps must be >= 1, got {substeps}")
        start = time.perf_counter()
        self._ctrl[...] = ctrl
        self._batch.step(nstep=substeps, stage=_VEL)
        self.timings["physics_ms"] = (time.perf_counter() - start) * 1e3

    def reset(self, env_ids: np.ndarray, qpos: np.ndarray, qvel: np.ndarray) -> None:
        """Clear rows ``env_ids`` (time, warm start, controls, applied forces), set their state
        and compute their velocity stage; other rows are not touched."""
        ids = np.asarray(env_ids, dtype=np.int64)
        if qpos.shape != (len(ids), self.info.nq) or qvel.shape != (len(ids), self.info.nv):
            raise ValueError(
                f"reset of {len(ids)} rows needs qpos {(len(ids), self.info.nq)} and qvel "
                f"{(len(ids), self.info.nv)}, got {qpos.shape} and {qvel.shape}"
            )
        if len(ids) == 0:
            return
        self._batch.reset(ids, stage=_NONE)
        self._qpos[ids] = qpos
        self._qvel[ids] = qvel
        self._batch.forward(ids, stage=_VEL)

    def apply_body_velocity_kick(self, env_ids: np.ndarray, dvel_xy: np.ndarray) -> None:
        """Add world-frame xy velocity (len, 2) to the free base of rows ``env_ids`` and refresh
        their velocity-stage values so sensors reflect the kick."""
        if not self._free_base:
            raise ValueError(f"model {self.info.xml_path.name} has no free base joint to kick")
        ids = np.asarray(env_ids, dtype=np.int64)
        if len(ids) == 0:
            return
        self._qvel[ids, 0:2] += dvel_xy
        self._batch.forward(ids, stage=_VEL)

    def synchronize(self) -> None:
        """Nothing to wait for: ``step`` returns when the pool's work is done."""

    def close(self) -> None:
        """Drop the batch (its thread pool and MjData)."""
        self._batch = None
