"""MJWarp backend: ``num_envs`` MuJoCo worlds stepped by mujoco-warp on warp's default device.

The device is CUDA when warp finds one, else warp's CPU device (slow, but the same kernels, which
is what the tests use). The managers read a host cache: pinned host buffers (plain host buffers
on the CPU device) that hold ``qpos``, ``qvel`` and ``sensordata`` and are refreshed after every
step; the protocol's arrays are read-only NumPy views of them. State is float32, as in MJWarp.

What one ``step`` does and where its time goes (``timings``, ms, each synchronised):

* ``h2d_ms``: the controls copied to the device. Not part of ``physics_ms``: it belongs to writing
  the controls, so the env adds it to its ``apply_action_ms``.
* ``physics_ms``: the substeps (``mjw.step``) and then a position/velocity pass with their sensors,
  so that kinematics and position/velocity sensors describe the new state, as MuJoCo's
  ``mjSTAGE_VEL``; acceleration-stage sensors (``touch``) keep the values of the last substep,
  as after ``mj_step1``. On CUDA the whole sequence is one captured CUDA graph per substep count.
* ``d2h_ms``: the host-cache refresh alone (state, sensors and the per-world overflow flags).

``reset`` clears the rows on the device (``mjw.reset_data`` under a world mask set on the device:
time, warm start, controls, activations, sensors), writes their state and runs the
position/velocity pass, as the MuJoCo backend does; velocity kicks run the same pass. Both move
only the affected rows (``envruntime.backends.mjwarp_rows``): their ids and state go up as ``k``
rows scattered by a kernel, and their sensor rows come back gathered by a kernel, so no
whole-world array crosses the bus. The position/velocity pass itself still computes every world
(mujoco-warp's forward functions take no world mask; for the other worlds it recomputes the
values they hold). Only the rows touched take new values in the host cache. These transfers are
timed by the env's ``reset_done_ms`` (resets) and ``update_state_ms`` (pushes). ``threads`` is accepted
for the common constructor and unused: warp schedules its own kernels.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from pathlib import Path
from types import ModuleType
from typing import Any

import mujoco
import numpy as np

from envruntime.backends.base import ModelInfo

INSTALL_HINT = "mujoco-warp is not installed: pip install 'shasweep[mjwarp]'"
# Per-world contact and constraint-row capacity. MuJoCo saw at most 12 contacts and 49 rows per
# world in Go2/G1 falls with random controls; overflowing worlds raise (see _raise_on_overflow).
NCONMAX = 64
NJMAX = 128


class MjwarpNotInstalledError(ImportError):
    """mujoco-warp or warp-lang is missing; the message says how to install them."""


def import_mjwarp() -> tuple[ModuleType, ModuleType]:
    """Import ``warp`` and ``mujoco_warp``, or raise ``MjwarpNotInstalledError``."""
    try:
        import mujoco_warp
        import warp
    except ImportError as exc:
        raise MjwarpNotInstalledError(f"{INSTALL_HINT} ({exc})") from exc
    return warp, mujoco_warp


class _LaunchCache:
    """Runs a sequence of warp launches: captured once per key into a CUDA graph on CUDA,
    launched directly on the CPU device (which has no graphs)."""

    def __init__(self, wp: ModuleType, device: Any) -> None:
        self._wp = wp
        self._device = device
        self._graphs: dict[Hashable, Any] = {}

    def run(self, key: Hashable, launches: Callable[[], None]) -> None:
        if not self._device.is_cuda:
            launches()
            return
        graph = self._graphs.get(key)
        if graph is None:
            with self._wp.ScopedCapture(device=self._device) as capture:
                launches()
            graph = self._graphs[key] = capture.graph
        self._wp.capture_launch(graph)

    def clear(self) -> None:
        """Forget the graphs (they hold array addresses that are about to change)."""
        self._graphs.clear()


def _read_only(array: np.ndarray) -> np.ndarray:
    view = array.view()
    view.flags.writeable = False
    return view


class MjwarpBackend:
    """A batch of MuJoCo worlds on the warp device, with a pinned host cache of the state."""

    name = "mjwarp"

    def __init__(self, xml_path: str | Path, num_envs: int, threads: int) -> None:
        wp, mjw = import_mjwarp()
        if num_envs < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        path = Path(xml_path)
        if not path.is_file():
            raise FileNotFoundError(f"MJCF not found: {path}")
        self._wp, self._mjw = wp, mjw
        wp.init()
        self._device = wp.get_device()
        mjm = mujoco.MjModel.from_xml_path(str(path))
        self.info = ModelInfo.from_model(mjm, path)
        self.num_envs = num_envs
        self.dtype = np.dtype(np.float32)
        self.timings = {"physics_ms": 0.0, "d2h_ms": 0.0, "h2d_ms": 0.0}

        self._model = mjw.put_model(mjm)
        self._data = mjw.make_data(mjm, nworld=num_envs, nconmax=NCONMAX, njmax=NJMAX)
        self._launches = _LaunchCache(wp, self._device)
        self._buffer_overflows = int(
            mjw.OverflowType.NEFC | mjw.OverflowType.BROADPHASE | mjw.OverflowType.NARROWPHASE)
        free = [j for j in range(mjm.njnt) if mjm.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE]
        self._free_dof = int(mjm.jnt_dofadr[free[0]]) if free else None

        from envruntime.backends.mjwarp_rows import RowTransfer  # needs warp, known installed now

        d = self._data
        self._ctrl_host = self._host_like(d.ctrl)
        self._mask_dev = wp.zeros(num_envs, dtype=bool, device=self._device)
        self._rows = RowTransfer(self._device, num_envs, {"qpos": self.info.nq, "qvel": self.info.nv,
                                                          "sensordata": self.info.nsensordata})
        self._qpos_host = self._host_like(d.qpos)
        self._qvel_host = self._host_like(d.qvel)
        self._sensordata_host = self._host_like(d.sensordata)
        self._overflow_host = self._host_like(d.overflow)
        self.qpos = _read_only(self._qpos_host.numpy())
        self.qvel = _read_only(self._qvel_host.numpy())
        self.sensordata = _read_only(self._sensordata_host.numpy())

        self._position_velocity_pass()
        self._copy_state_to_host()
        wp.synchronize_device(self._device)

    # ----------------------------------------------------------------- protocol
    def sensor(self, name: str) -> np.ndarray:
        """(N, dim) view of one sensor's columns of ``sensordata``."""
        return self.sensordata[:, self.info.sensor_slice(name)]

    def step(self, ctrl: np.ndarray, substeps: int) -> None:
        """Upload ``ctrl`` (N, nu), run ``substeps`` physics steps, refresh the host cache."""
        ctrl = np.asarray(ctrl)
        if ctrl.shape != (self.num_envs, self.info.nu):
            raise ValueError(f"ctrl must have shape {(self.num_envs, self.info.nu)}, got {ctrl.shape}")
        if substeps < 1:
            raise ValueError(f"substeps must be >= 1, got {substeps}")
        wp = self._wp
        t0 = time.perf_counter()
        np.copyto(self._ctrl_host.numpy(), ctrl, casting="same_kind")
        wp.copy(self._data.ctrl, self._ctrl_host)
        wp.synchronize_device(self._device)
        t1 = time.perf_counter()
        self._launches.run(("step", substeps), lambda: self._advance(substeps))
        wp.synchronize_device(self._device)
        t2 = time.perf_counter()
        self._copy_state_to_host()
        wp.synchronize_device(self._device)
        t3 = time.perf_counter()
        self.timings["h2d_ms"] = (t1 - t0) * 1e3
        self.timings["physics_ms"] = (t2 - t1) * 1e3
        self.timings["d2h_ms"] = (t3 - t2) * 1e3
        self._raise_on_overflow()

    def reset(self, env_ids: np.ndarray, qpos: np.ndarray, qvel: np.ndarray) -> None:
        """Set rows ``env_ids`` to ``qpos``/``qvel`` on the device and recompute them."""
        ids = self._check_ids(env_ids)
        qpos, qvel = np.asarray(qpos), np.asarray(qvel)
        if qpos.shape != (len(ids), self.info.nq) or qvel.shape != (len(ids), self.info.nv):
            raise ValueError(f"reset of {len(ids)} rows needs qpos {(len(ids), self.info.nq)} and qvel "
                             f"{(len(ids), self.info.nv)}, got {qpos.shape} and {qvel.shape}")
        if len(ids) == 0:
            return
        mjw, d, rows = self._mjw, self._data, self._rows
        self._qpos_host.numpy()[ids] = qpos
        self._qvel_host.numpy()[ids] = qvel
        rows.select(ids, self._mask_dev)
        self._launches.run("reset_rows", lambda: mjw.reset_data(self._model, d, self._mask_dev))
        rows.scatter("qpos", qpos, d.qpos)
        rows.scatter("qvel", qvel, d.qvel)
        self._refresh_rows(ids)

    def apply_body_velocity_kick(self, env_ids: np.ndarray, dvel_xy: np.ndarray) -> None:
        """Add world-frame xy velocity to the free base of rows ``env_ids`` (host and device)."""
        if self._free_dof is None:
            raise ValueError(f"model {self.info.xml_path.name} has no free joint to kick")
        ids = self._check_ids(env_ids)
        dvel_xy = np.asarray(dvel_xy)
        if dvel_xy.shape != (len(ids), 2):
            raise ValueError(f"dvel_xy must have shape {(len(ids), 2)}, got {dvel_xy.shape}")
        if len(ids) == 0:
            return
        qvel = self._qvel_host.numpy()
        qvel[ids, self._free_dof:self._free_dof + 2] += dvel_xy
        self._rows.select(ids)
        self._rows.scatter("qvel", qvel[ids], self._data.qvel)
        self._refresh_rows(ids)

    @property
    def row_bytes_moved(self) -> int:
        """Host<->device bytes that resets and kicks moved so far (their rows only)."""
        return self._rows.bytes_moved

    def synchronize(self) -> None:
        """Wait for every kernel and copy queued on the device."""
        self._wp.synchronize_device(self._device)

    def close(self) -> None:
        """Drop the graphs and device arrays."""
        self._launches.clear()
        self._model = self._data = None

    # ----------------------------------------------------------------- internals
    def _host_like(self, device_array: Any) -> Any:
        return self._wp.empty(device_array.shape, dtype=device_array.dtype, device="cpu",
                              pinned=self._device.is_cuda)

    def _check_ids(self, env_ids: np.ndarray) -> np.ndarray:
        ids = np.asarray(env_ids, dtype=np.int64).reshape(-1)
        if ids.size and (ids.min() < 0 or ids.max() >= self.num_envs):
            raise IndexError(f"env_ids must lie in [0, {self.num_envs}), got {ids.min()}..{ids.max()}")
        return ids

    def _advance(self, substeps: int) -> None:
        for _ in range(substeps):
            self._mjw.step(self._model, self._data)
        self._position_velocity_pass()

    def _position_velocity_pass(self) -> None:
        """Kinematics and position/velocity sensors at the current state (mjSTAGE_VEL)."""
        mjw, m, d = self._mjw, self._model, self._data
        mjw.fwd_position(m, d, factorize=False)
        mjw.sensor_pos(m, d)
        mjw.fwd_velocity(m, d)
        mjw.sensor_vel(m, d)

    def _refresh_rows(self, ids: np.ndarray) -> None:
        """Run the position/velocity pass and take the new sensor rows of the selected ``ids``."""
        self._launches.run("position_velocity", self._position_velocity_pass)
        self._sensordata_host.numpy()[ids] = self._rows.gather("sensordata", self._data.sensordata)

    def _copy_state_to_host(self) -> None:
        d = self._data
        self._wp.copy(self._qpos_host, d.qpos)
        self._wp.copy(self._qvel_host, d.qvel)
        self._wp.copy(self._sensordata_host, d.sensordata)
        self._wp.copy(self._overflow_host, d.overflow)

    def _raise_on_overflow(self) -> None:
        flags = self._overflow_host.numpy() & self._buffer_overflows
        if flags.any():
            worlds = np.flatnonzero(flags)
            names = self._mjw.OverflowType(int(np.bitwise_or.reduce(flags[worlds]))).name
            raise RuntimeError(
                f"mujoco-warp contact/constraint buffers overflowed ({names}) in {len(worlds)} of "
                f"{self.num_envs} worlds (first: {worlds[0]}); the results would be wrong")
