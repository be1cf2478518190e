"""The MuJoCo batch backend: shapes, protocol, partial resets, sensors, kicks, timings."""

from __future__ import annotations

import os
from pathlib import Path

import mujoco
import numpy as np
import pytest

import envruntime
from envruntime.backends import Backend, make_backend
from envruntime.backends.mujoco_backend import MujocoBackend

XML_PATH = Path(envruntime.__file__).parent / "assets" / "go2_scene.xml"
N = 6


@pytest.fixture
def backend() -> MujocoBackend:
    b = MujocoBackend(XML_PATH, num_envs=N, threads=2)
    qpos, qvel = b.info.keyframes["home"]
    b.reset(np.arange(N), np.tile(qpos, (N, 1)), np.tile(qvel, (N, 1)))
    yield b
    b.close()


def _home_ctrl(b: MujocoBackend) -> np.ndarray:
    return np.tile(b.info.keyframes["home"][0][7:], (b.num_envs, 1))


def test_protocol_and_shapes(backend: MujocoBackend) -> None:
    info = backend.info
    assert isinstance(backend, Backend)
    assert (info.nq, info.nv, info.nu) == (19, 18, 12)
    assert info.joint_names[:3] == ("FL_hip_joint", "FL_thigh_joint", "FL_calf_joint")
    np.testing.assert_array_equal(info.actuator_joint, np.arange(12))
    assert backend.qpos.shape == (N, 19) and backend.qvel.shape == (N, 18)
    assert backend.sensordata.shape == (N, info.nsensordata)
    assert backend.sensor("orientation").shape == (N, 4)
    assert backend.sensor("FL_foot_pos").shape == (N, 3)
    assert backend.dtype == np.float64 and backend.qpos.dtype == np.float64
    assert not backend.qpos.flags.writeable


def test_make_backend_builds_mujoco() -> None:
    b = make_backend("mujoco", XML_PATH, num_envs=2, threads=1)
    assert isinstance(b, MujocoBackend) and b.threads == 1
    assert MujocoBackend(XML_PATH, num_envs=1).threads == len(os.sched_getaffinity(0))
    with pytest.raises(ValueError, match="unknown sim 'bogus'"):
        make_backend("bogus", XML_PATH, num_envs=2)


def test_bad_arguments_name_the_problem(backend: MujocoBackend) -> None:
    with pytest.raises(ValueError, match="ctrl must have shape"):
        backend.step(np.zeros((N, 3)), 1)
    with pytest.raises(ValueError, match="substeps"):
        backend.step(_home_ctrl(backend), 0)
    with pytest.raises(ValueError, match="reset of 2 rows"):
        backend.reset(np.array([0, 1]), np.zeros((2, 3)), np.zeros((2, 18)))
    with pytest.raises(FileNotFoundError, match="nope.xml"):
        MujocoBackend("nope.xml", num_envs=1, threads=1)


def test_step_matches_serial_mujoco(backend: MujocoBackend) -> None:
    """One row of the batch is bit-identical to mj_step on a single MjData."""
    ctrl = _home_ctrl(backend)
    ctrl[:, 1] += np.linspace(-0.3, 0.3, N)
    for _ in range(3):
        backend.step(ctrl, 4)
    model = backend.model
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, model.key("home").id)
    data.ctrl[:] = ctrl[2]
    mujoco.mj_step(model, data, nstep=12)
    np.testing.assert_array_equal(backend.qpos[2], data.qpos)
    np.testing.assert_array_equal(backend.qvel[2], data.qvel)


def test_sensors_are_current_after_step(backend: MujocoBackend) -> None:
    backend.step(_home_ctrl(backend), 4)
    model = backend.model
    data = mujoco.MjData(model)
    data.qpos[:], data.qvel[:] = backend.qpos[1], backend.qvel[1]
    mujoco.mj_fwdPosition(model, data)
    mujoco.mj_fwdVelocity(model, data)
    mujoco.mj_sensorPos(model, data)
    mujoco.mj_sensorVel(model, data)
    for name in ("orientation", "local_linvel", "gyro", "FR_foot_pos", "RL_foot_linvel"):
        np.testing.assert_allclose(backend.sensor(name)[1], data.sensor(name).data, atol=1e-12)


def test_partial_reset_leaves_other_rows_untouched(backend: MujocoBackend) -> None:
    ctrl = _home_ctrl(backend)
    ctrl[:, 2] -= 0.4
    backend.step(ctrl, 8)
    qpos, qvel, sens = backend.qpos.copy(), backend.qvel.copy(), backend.sensordata.copy()
    ids = np.array([1, 4])
    new_qpos = np.tile(backend.info.keyframes["home"][0], (2, 1))
    new_qpos[:, 0] = [0.5, -0.5]
    backend.reset(ids, new_qpos, np.zeros((2, 18)))
    others = np.setdiff1d(np.arange(N), ids)
    np.testing.assert_array_equal(backend.qpos[others], qpos[others])
    np.testing.assert_array_equal(backend.qvel[others], qvel[others])
    np.testing.assert_array_equal(backend.sensordata[others], sens[others])
    np.testing.assert_array_equal(backend.qpos[ids], new_qpos)
    assert np.all(backend.qvel[ids] == 0.0)
    np.testing.assert_allclose(backend.sensor("base_pos")[ids, 0], [0.5 - 0.02557, -0.5 - 0.02557])


def test_velocity_kick_moves_base_and_sensors(backend: MujocoBackend) -> None:
    before = backend.qvel.copy()
    backend.apply_body_velocity_kick(np.array([3]), np.array([[0.7, -0.2]]))
    np.testing.assert_allclose(backend.qvel[3, :2], before[3, :2] + [0.7, -0.2])
    np.testing.assert_array_equal(backend.qvel[[0, 1, 2, 4, 5]], before[[0, 1, 2, 4, 5]])
    np.testing.assert_allclose(backend.sensor("global_linvel")[3, :2], backend.qvel[3, :2], atol=1e-9)


def test_timings_keys(backend: MujocoBackend) -> None:
    backend.step(_home_ctrl(backend), 2)
    assert set(backend.timings) == {"physics_ms", "d2h_ms"}
    assert backend.timings["physics_ms"] > 0.0 and backend.timings["d2h_ms"] == 0.0
