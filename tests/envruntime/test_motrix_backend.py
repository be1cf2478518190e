"""MotrixSim backend: protocol, MuJoCo layout of state and sensors, resets, kicks, params, panics.

Sensor checks compare against MuJoCo's ``mj_forward`` evaluated at the backend's own state:
position/velocity-stage sensors are pure kinematics, so both engines must agree to float32
precision whatever their dynamics do.
"""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np
import pytest

from envruntime.backends import Backend, make_backend
from envruntime.backends.motrix.backend import MotrixBackend, ensure_thread_pool
from envruntime.backends.motrix.layout import LayoutError
from envruntime.backends.motrix.panic import MotrixPanicError, describe_rows, panics_as_errors

DATA = Path(__file__).parent / "data"
MINI_QUAD = DATA / "mini_quad.xml"
ASSETS = Path(__file__).parents[2] / "envruntime" / "assets"
MODELS = [MINI_QUAD, ASSETS / "go2_scene.xml", ASSETS / "g1.xml"]
N = 6


def _backend(xml: Path = MINI_QUAD, num_envs: int = N) -> MotrixBackend:
    return MotrixBackend(xml, num_envs=num_envs, threads=2)


def _home(backend: MotrixBackend, rows: int) -> tuple[np.ndarray, np.ndarray]:
    qpos, qvel = backend.info.keyframes["home"]
    return np.tile(qpos, (rows, 1)), np.tile(qvel, (rows, 1))


def _random_state(mj: mujoco.MjModel, rows: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Airborne states with a tilted, yawed base, bent joints and non-zero velocities."""
    rng = np.random.default_rng(seed)
    qpos = np.tile(mj.key_qpos[0], (rows, 1))
    qpos[:, 2] += 1.0
    quat = rng.normal(size=(rows, 4))
    qpos[:, 3:7] = quat / np.linalg.norm(quat, axis=1, keepdims=True)
    qpos[:, 7:] += rng.uniform(-0.3, 0.3, size=(rows, mj.nq - 7))
    qvel = rng.uniform(-1.0, 1.0, size=(rows, mj.nv))
    return qpos, qvel


def _kinematic_sensor_cols(mj: mujoco.MjModel) -> np.ndarray:
    stages = (int(mujoco.mjtStage.mjSTAGE_POS), int(mujoco.mjtStage.mjSTAGE_VEL))
    return np.concatenate([np.arange(mj.sensor_adr[s], mj.sensor_adr[s] + mj.sensor_dim[s])
                           for s in range(mj.nsensor) if int(mj.sensor_needstage[s]) in stages])


def _assert_kinematic_sensors_match_mujoco(backend: MotrixBackend, mj: mujoco.MjModel) -> None:
    """Sensors of POS/VEL stage equal MuJoCo's mj_forward at the backend's state; quaternions
    up to sign (q and -q are one rotation, and the engines pick signs differently)."""
    data = mujoco.MjData(mj)
    expected = np.empty((backend.num_envs, mj.nsensordata))
    for row in range(backend.num_envs):
        data.qpos[:], data.qvel[:] = backend.qpos[row], backend.qvel[row]
        mujoco.mj_forward(mj, data)
        expected[row] = data.sensordata
    quat = (int(mujoco.mjtSensor.mjSENS_FRAMEQUAT), int(mujoco.mjtSensor.mjSENS_BALLQUAT))
    for s in np.flatnonzero([int(t) in quat for t in mj.sensor_type]):
        cols = slice(mj.sensor_adr[s], mj.sensor_adr[s] + 4)
        sign = np.sign((expected[:, cols] * backend.sensordata[:, cols]).sum(axis=1, keepdims=True))
        expected[:, cols] *= sign
    cols = _kinematic_sensor_cols(mj)
    np.testing.assert_allclose(backend.sensordata[:, cols], expected[:, cols], atol=2e-4)


def test_protocol_shapes_and_dtypes() -> None:
    backend = _backend()
    info = backend.info
    assert isinstance(backend, Backend)
    assert backend.name == "motrix" and backend.dtype == np.float32
    for array, width in ((backend.qpos, info.nq), (backend.qvel, info.nv),
                         (backend.sensordata, info.nsensordata)):
        assert array.shape == (N, width) and array.dtype == np.float32 and array.flags.c_contiguous
    assert backend.sensor("FL_pos").shape == (N, 3)
    assert backend.sensor("orientation").shape == (N, 4)
    with pytest.raises(ValueError):
        backend.qpos[0, 0] = 1.0  # consumers read; reset writes
    backend.step(np.zeros((N, info.nu)), substeps=2)
    assert set(backend.timings) == {"physics_ms", "d2h_ms"}
    assert backend.timings["physics_ms"] > 0.0 and backend.timings["d2h_ms"] == 0.0
    backend.close()


def test_make_backend_builds_motrix() -> None:
    backend = make_backend("motrix", MINI_QUAD, num_envs=2, threads=2)
    assert isinstance(backend, MotrixBackend) and backend.num_envs == 2


@pytest.mark.parametrize("xml", MODELS, ids=lambda p: p.stem)
def test_state_round_trips_in_mujoco_layout(xml: Path) -> None:
    mj = mujoco.MjModel.from_xml_path(str(xml))
    backend = _backend(xml)
    qpos, qvel = _random_state(mj, N, seed=1)
    backend.reset(np.arange(N), qpos, qvel)
    np.testing.assert_allclose(backend.qpos, qpos, atol=1e-6)  # scalar-first quaternion back
    np.testing.assert_allclose(backend.qvel, qvel, atol=1e-6)


@pytest.mark.parametrize("xml", MODELS, ids=lambda p: p.stem)
def test_sensors_match_mujoco_after_reset_and_step(xml: Path) -> None:
    mj = mujoco.MjModel.from_xml_path(str(xml))
    backend = _backend(xml)
    qpos, qvel = _random_state(mj, N, seed=2)
    backend.reset(np.arange(N), qpos, qvel)
    _assert_kinematic_sensors_match_mujoco(backend, mj)
    for _ in range(3):
        backend.step(np.tile(mj.key_ctrl[0], (N, 1)), substeps=4)
    # current after step: evaluated at the new state, not the one the last substep started from
    _assert_kinematic_sensors_match_mujoco(backend, mj)


def test_reset_of_some_rows_leaves_the_others_untouched() -> None:
    backend = _backend()
    qpos, qvel = _home(backend, N)
    backend.reset(np.arange(N), qpos, qvel)
    ctrl = np.tile(qpos[0, 7:], (N, 1)) + np.linspace(-0.05, 0.05, N)[:, None]
    for _ in range(30):  # settle on the feet, rows slightly apart
        backend.step(ctrl, substeps=4)
    before = [backend.qpos.copy(), backend.qvel.copy(), backend.sensordata.copy()]
    rows = np.array([4, 1])
    new_qpos, new_qvel = _home(backend, 2)
    new_qpos[:, 2] = [0.5, 0.7]
    backend.reset(rows, new_qpos, new_qvel)
    others = np.setdiff1d(np.arange(N), rows)
    for now, then in zip([backend.qpos, backend.qvel, backend.sensordata], before, strict=True):
        np.testing.assert_array_equal(now[others], then[others])
    np.testing.assert_allclose(backend.qpos[rows], new_qpos, atol=1e-6)
    np.testing.assert_allclose(backend.sensor("trunk_pos")[rows, 2], [0.5, 0.7], atol=1e-6)
    assert not backend.sensor("FL_touch")[rows].any()  # acceleration-stage: 0 until the next step
    assert backend.sensor("FL_touch")[others].all()


@pytest.mark.parametrize(("rows", "qpos_rows", "match"), [
    ([0, 9], 2, "lie in"), ([1, 1], 2, "not repeat"), ([0, 1], 3, "needs qpos")])
def test_reset_rejects_bad_input(rows: list[int], qpos_rows: int, match: str) -> None:
    backend = _backend()
    qpos, qvel = _home(backend, qpos_rows)
    with pytest.raises(ValueError, match=match):
        backend.reset(np.array(rows), qpos, qvel[:2])


def test_step_rejects_bad_input() -> None:
    backend = _backend()
    with pytest.raises(ValueError, match="ctrl must have shape"):
        backend.step(np.zeros((N, 3)), substeps=1)
    with pytest.raises(ValueError, match="substeps"):
        backend.step(np.zeros((N, backend.info.nu)), substeps=0)


def test_constructor_rejects_bad_input(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="num_envs"):
        MotrixBackend(MINI_QUAD, num_envs=0, threads=1)
    with pytest.raises(FileNotFoundError, match="MJCF not found"):
        MotrixBackend(tmp_path / "absent.xml", num_envs=1, threads=1)


def test_velocity_kick_adds_world_xy_velocity_to_chosen_rows() -> None:
    backend = _backend()
    backend.reset(np.arange(N), *_home(backend, N))
    before_qvel, before_linvel = backend.qvel.copy(), backend.sensor("local_linvel").copy()
    rows, kick = np.array([0, 3]), np.array([[0.5, -0.25], [1.0, 0.0]])
    backend.apply_body_velocity_kick(rows, kick)
    np.testing.assert_allclose(backend.qvel[rows, 0:2], before_qvel[rows, 0:2] + kick, atol=1e-6)
    np.testing.assert_allclose(backend.sensor("local_linvel")[rows, 0:2],
                               before_linvel[rows, 0:2] + kick, atol=1e-5)  # base not yawed
    others = np.setdiff1d(np.arange(N), rows)
    np.testing.assert_array_equal(backend.qvel[others], before_qvel[others])


def test_unsupported_and_unnamed_sensors_are_clear_errors(tmp_path: Path) -> None:
    xml = MINI_QUAD.read_text()
    for sensor, match in (('<magnetometer name="mag" site="imu"/>', "'mag' .*MAGNETOMETER"),
                          ('<gyro site="imu"/>', "has no name")):
        path = tmp_path / "bad.xml"
        path.write_text(xml.replace("<sensor>", f"<sensor>{sensor}"))
        with pytest.raises(LayoutError, match=match):
            MotrixBackend(path, num_envs=1, threads=2)


def test_reset_normalises_quaternions_and_rejects_zero_ones() -> None:
    backend = _backend()
    qpos, qvel = _home(backend, 2)
    qpos[0, 3:7] = [2.0, 0.0, 0.0, 0.0]  # MuJoCo accepts and normalises this; so does the backend
    backend.reset(np.array([3, 5]), qpos, qvel)
    np.testing.assert_allclose(backend.qpos[3, 3:7], [1.0, 0.0, 0.0, 0.0])
    qpos[1, 3:7] = 0.0
    with pytest.raises(ValueError, match=r"rows \[5\] has zero or non-finite quaternions"):
        backend.reset(np.array([3, 5]), qpos, qvel)


def test_a_real_rust_panic_becomes_motrix_panic_error() -> None:
    backend = _backend(num_envs=2)
    bad = np.tile(backend.model.compute_init_dof_pos(), (2, 1))
    bad[:, 3:7] = [0.0, 0.0, 0.0, 2.0]  # SceneData.set_dof_pos panics on a non-unit quaternion
    with pytest.raises(MotrixPanicError, match=r"writing rows \[0, 1\].*normalized quaternion"):
        with panics_as_errors(f"writing {describe_rows(np.arange(2))}"):
            backend._data.set_dof_pos(bad, backend.model)


def test_rust_panic_at_load_names_the_file(tmp_path: Path) -> None:
    # MotrixSim 0.10.1 panics on a frame sensor that references the world body
    path = tmp_path / "world_ref.xml"
    path.write_text(MINI_QUAD.read_text().replace(
        "<sensor>", '<sensor><framezaxis name="z" objtype="site" objname="imu" reftype="body" '
        'refname="world"/>'))
    with pytest.raises(MotrixPanicError, match="loading .*world_ref.xml.*world"):
        MotrixBackend(path, num_envs=1, threads=2)


def test_panics_as_errors_passes_other_exceptions_through() -> None:
    with pytest.raises(KeyboardInterrupt):
        with panics_as_errors("doing nothing"):
            raise KeyboardInterrupt
    with pytest.raises(ZeroDivisionError):
        with panics_as_errors("dividing"):
            _ = 1 / 0
    assert describe_rows(np.arange(20)) == "rows [0, 1, 2, 3, 4, 5, 6, 7, ...] (20 rows)"


def test_thread_pool_is_sized_once() -> None:
    size = ensure_thread_pool(2)  # earlier tests in this process sized it already
    with pytest.warns(RuntimeWarning, match="cannot resize"):
        assert ensure_thread_pool(size + 1) == size
