"""MotrixSim CPU backend: N worlds in one batched ``SceneData`` on MotrixSim's Rayon pool.

MotrixSim computes in float32 (``dtype`` is float32) and uses scalar-last quaternions; at this
boundary everything is in MuJoCo's layout (see ``layout``): ``qpos``/``qvel``/``sensordata``
are contiguous float32 arrays with MuJoCo's columns and scalar-first quaternions, so tasks read
them exactly as on the MuJoCo backend.

One step: controls go in through a compiled write program, ``step_n`` runs the substeps, then a
forward-kinematics pass makes position/velocity sensors current at the new state (MotrixSim's
step leaves them at the state the last substep started from), and one compiled query program
reads DoF state and all sensors into a reusable buffer that is gathered into the three arrays.
No copying getters, no per-env Python loops. All of it counts as ``physics_ms``; ``d2h_ms`` is
0.0 (nothing crosses a device boundary). Acceleration-stage sensors (accelerometer, touch) are
those of the last substep, and read 0 on rows just reset, as on the MuJoCo backend.

MotrixSim's worker pool is process-wide and can be sized only once: the first backend sizes it
to its ``threads``; ``threads`` reports the pool's real size.
"""

from __future__ import annotations

import time
import warnings
from pathlib import Path

import motrixsim
import mujoco
import numpy as np
from motrixsim import write

from envruntime.backends.base import ModelInfo
from envruntime.backends.motrix.layout import MotrixLayout
from envruntime.backends.motrix.panic import describe_rows, panics_as_errors

# The size of this process's MotrixSim pool once a backend initialised it (it cannot change).
_POOL_THREADS: dict[str, int] = {}


def _read_only(array: np.ndarray) -> np.ndarray:
    view = array.view()
    view.flags.writeable = False
    return view


def ensure_thread_pool(threads: int) -> int:
    """Size MotrixSim's process-wide pool to ``threads`` unless done already; return its size."""
    if "threads" not in _POOL_THREADS:
        try:
            motrixsim.init_thread_pool(num_threads=threads)
        except RuntimeError as exc:  # sized by code outside this module, or lazily by a step
            warnings.warn(f"cannot size MotrixSim's thread pool to {threads}: {exc}",
                          RuntimeWarning, stacklevel=3)
        _POOL_THREADS["threads"] = threads
    elif _POOL_THREADS["threads"] != threads:
        warnings.warn(f"MotrixSim's thread pool already has {_POOL_THREADS['threads']} threads; "
                      f"cannot resize it to {threads}", RuntimeWarning, stacklevel=3)
    return _POOL_THREADS["threads"]


def _normalised_quaternions(qpos: np.ndarray, quat_cols: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """``qpos`` with unit joint quaternions (MotrixSim rejects others; MuJoCo normalises them
    itself); zero or non-finite quaternions are a ValueError naming their rows."""
    out = np.array(qpos, dtype=np.float64)
    quats = out[:, quat_cols]
    norms = np.linalg.norm(quats, axis=2, keepdims=True)
    bad = (~np.isfinite(norms) | (norms < 1e-9)).any(axis=(1, 2))
    if bad.any():
        raise ValueError(f"reset: qpos of {describe_rows(ids[bad])} has zero or non-finite quaternions")
    out[:, quat_cols] = quats / norms
    return out


class MotrixBackend:
    """``num_envs`` copies of the MJCF at ``xml_path`` stepped by MotrixSim on ``threads`` threads."""

    name = "motrix"

    def __init__(self, xml_path: str | Path, num_envs: int, threads: int) -> None:
        if num_envs < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        if threads < 1:
            raise ValueError(f"threads must be >= 1, got {threads}")
        path = Path(xml_path)
        if not path.is_file():
            raise FileNotFoundError(f"MJCF not found: {path}")
        self.threads = ensure_thread_pool(threads)
        mj = mujoco.MjModel.from_xml_path(str(path))
        self.info = ModelInfo.from_model(mj, path)
        with panics_as_errors(f"loading {path}"):
            self.model = motrixsim.load_model(path)
        self.layout = MotrixLayout.build(mj, self.model)
        self.num_envs = num_envs
        self.dtype = np.dtype(np.float32)
        self._data = motrixsim.SceneData(self.model, batch=[num_envs])
        self._query = self.model.compile_query(self.layout.query_fields).allocate(self._data)
        self._ctrl = self.model.compile_write(
            {"ctrl": write.ActuatorCtrls(list(self.info.actuator_names))}).allocate(self._data)
        self._ctrl_in = self._ctrl["ctrl"]  # (N, nu) view of the program's buffer
        self._all_rows = describe_rows(np.arange(num_envs))
        self._kick = None if self.layout.free_base_body is None else self.model.compile_write(
            {"linvel": write.BodyLinearVelocity([self.layout.free_base_body])},
            forward_kinematic=True).allocate(self._data)
        self._qpos = np.zeros((num_envs, self.info.nq), dtype=np.float32)
        self._qvel = np.zeros((num_envs, self.info.nv), dtype=np.float32)
        self.qpos = _read_only(self._qpos)
        self.qvel = _read_only(self._qvel)
        self.sensordata = np.zeros((num_envs, self.info.nsensordata), dtype=np.float32)
        self.timings = {"physics_ms": 0.0, "d2h_ms": 0.0}
        self._steps = 0
        all_rows = np.arange(num_envs)
        self.reset(all_rows, np.tile(mj.qpos0, (num_envs, 1)), np.zeros((num_envs, self.info.nv)))

    def sensor(self, name: str) -> np.ndarray:
        """(N, dim) view of sensor ``name``'s columns of ``sensordata``."""
        return self.sensordata[:, self.info.sensor_slice(name)]

    def step(self, ctrl: np.ndarray, substeps: int) -> None:
        """Write ``ctrl`` (N, nu), run ``substeps`` physics steps, refresh the state arrays."""
        if ctrl.shape != (self.num_envs, self.info.nu):
            raise ValueError(f"ctrl must have shape {(self.num_envs, self.info.nu)}, got {ctrl.shape}")
        if substeps < 1:
            raise ValueError(f"substeps must be >= 1, got {substeps}")
        start = time.perf_counter()
        with panics_as_errors(f"stepping {self._all_rows} (step {self._steps}, {substeps} substeps)"):
            self._ctrl_in[...] = ctrl
            self._ctrl.execute(self._data)
            self.model.step_n(self._data, substeps)
            self.model.forward_kinematic(self._data)
            self._query.execute(self._data)
        self._gather_all()
        self._steps += 1
        self.timings["physics_ms"] = (time.perf_counter() - start) * 1e3

    def reset(self, env_ids: np.ndarray, qpos: np.ndarray, qvel: np.ndarray) -> None:
        """Set rows ``env_ids`` to the given MuJoCo-layout state and make their kinematics and
        sensors current; other rows are not touched."""
        ids = self._checked_rows(env_ids)
        if qpos.shape != (len(ids), self.info.nq) or qvel.shape != (len(ids), self.info.nv):
            raise ValueError(
                f"reset of {len(ids)} rows needs qpos {(len(ids), self.info.nq)} and qvel "
                f"{(len(ids), self.info.nv)}, got {qpos.shape} and {qvel.shape}")
        if len(ids) == 0:
            return
        dof_pos = np.empty((len(ids), self.info.nq), dtype=np.float32)
        dof_vel = np.empty((len(ids), self.info.nv), dtype=np.float32)
        dof_pos[:, self.layout.dof_pos_cols] = _normalised_quaternions(qpos, self.layout.quat_qpos_cols, ids)
        dof_vel[:, self.layout.dof_vel_cols] = qvel
        with panics_as_errors(f"resetting {describe_rows(ids)}"):
            rows = self._data[motrixsim.DisjointIndices(ids)]
            rows.reset(self.model, dof_pos, dof_vel, forward_kinematic=True, reset_overrides=False)
            self._query.execute(self._data, ids)
        self._gather_rows(ids)
        self.sensordata[np.ix_(ids, self.layout.acc_sensor_cols)] = 0.0

    def apply_body_velocity_kick(self, env_ids: np.ndarray, dvel_xy: np.ndarray) -> None:
        """Add world-frame xy velocity (len, 2) to the free base of rows ``env_ids`` and refresh
        their kinematics so velocity sensors reflect the kick."""
        if self._kick is None:
            raise ValueError(f"model {self.info.xml_path.name} has no free base joint to kick")
        ids = self._checked_rows(env_ids)
        if dvel_xy.shape != (len(ids), 2):
            raise ValueError(f"dvel_xy must have shape {(len(ids), 2)}, got {dvel_xy.shape}")
        if len(ids) == 0:
            return
        linvel = self._kick["linvel"].reshape(self.num_envs, 3)  # a view of (N, 1 body, 3)
        linvel[ids] = self._qvel[ids, 0:3]
        linvel[ids, 0:2] += dvel_xy
        with panics_as_errors(f"kicking {describe_rows(ids)}"):
            self._kick.execute(self._data, ids)
            self._query.execute(self._data, ids)
        self._gather_rows(ids)

    def synchronize(self) -> None:
        """Nothing to wait for: ``step`` returns when MotrixSim's work is done."""

    def close(self) -> None:
        """Drop the scene data and programs (the process-wide pool stays, as MotrixSim requires)."""
        self._data = self._query = self._ctrl = self._kick = None

    def _checked_rows(self, env_ids: np.ndarray) -> np.ndarray:
        ids = np.asarray(env_ids, dtype=np.int64).ravel()
        if ids.size and (ids.min() < 0 or ids.max() >= self.num_envs):
            raise ValueError(f"env_ids must lie in [0, {self.num_envs}), got {describe_rows(ids)}")
        if np.unique(ids).size != ids.size:
            raise ValueError(f"env_ids must not repeat, got {describe_rows(ids)}")
        return ids

    def _gather_all(self) -> None:
        buffer = self._query.buffer
        np.take(buffer, self.layout.qpos_cols, axis=1, out=self._qpos)
        np.take(buffer, self.layout.qvel_cols, axis=1, out=self._qvel)
        np.take(buffer, self.layout.sensor_cols, axis=1, out=self.sensordata)

    def _gather_rows(self, ids: np.ndarray) -> None:
        rows = self._query.buffer[ids]
        self._qpos[ids] = rows[:, self.layout.qpos_cols]
        self._qvel[ids] = rows[:, self.layout.qvel_cols]
        self.sensordata[ids] = rows[:, self.layout.sensor_cols]
