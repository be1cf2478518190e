"""The MJWarp backend on warp's CPU device, checked against the MuJoCo backend from the same state.

MJWarp computes in float32 and MuJoCo in float64, and both run the same iterative constraint
solver (10 iterations) on the same contacts, so after a few control steps with random controls the
two agree to float32 round-off amplified by the solver: qpos within 1e-5 (rad or m), qvel within
1e-3, and sensors within 1e-3 absolute plus 1e-3 relative (touch forces are tens of newtons).
Measured on this model: qpos 5e-7, qvel 3e-5, sensors 7e-4 (a touch force), so the tolerances
have a margin of about 20x and still catch a wrong stage, row or sign.

The first warp kernel compile takes one to two minutes (cached under ~/.cache/warp afterwards).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

import envruntime
from envruntime.backends import Backend, make_backend
from envruntime.backends.mjwarp_backend import MjwarpNotInstalledError
from envruntime.backends.mujoco_backend import MujocoBackend

XML_PATH = Path(envruntime.__file__).parent / "assets" / "go2_scene.xml"
N = 4
SUBSTEPS = 4
QPOS_ATOL, QVEL_ATOL, SENSOR_ATOL, SENSOR_RTOL = 1e-5, 1e-3, 1e-3, 1e-3

needs_mjwarp = pytest.mark.skipif(
    importlib.util.find_spec("mujoco_warp") is None or importlib.util.find_spec("warp") is None,
    reason="mujoco_warp is not importable: pip install 'shasweep[mjwarp]'")


def test_missing_mjwarp_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mujoco_warp", None)  # makes `import mujoco_warp` fail
    with pytest.raises(MjwarpNotInstalledError,
                       match=r"mujoco-warp is not installed: pip install 'shasweep\[mjwarp\]'") as err:
        make_backend("mjwarp", XML_PATH, num_envs=2, threads=1)
    assert isinstance(err.value, ImportError)


@pytest.fixture(scope="module")
def pair():
    warp_backend = make_backend("mjwarp", XML_PATH, num_envs=N, threads=1)
    cpu_backend = MujocoBackend(XML_PATH, num_envs=N, threads=1)
    yield warp_backend, cpu_backend
    warp_backend.close()
    cpu_backend.close()


def _start_state(backend: Backend, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The home pose with perturbed joints and random velocities, one per row."""
    qpos0, _ = backend.info.keyframes["home"]
    qpos = np.tile(qpos0, (N, 1))
    qpos[:, 7:] += 0.05 * rng.standard_normal((N, backend.info.nu))
    qvel = 0.1 * rng.standard_normal((N, backend.info.nv))
    return qpos, qvel


def _reset_both(pair, seed: int) -> None:
    qpos, qvel = _start_state(pair[0], np.random.default_rng(seed))
    for backend in pair:
        backend.reset(np.arange(N), qpos, qvel)


def _random_ctrl(backend: Backend, rng: np.random.Generator) -> np.ndarray:
    home = backend.info.keyframes["home"][0][7:]
    return np.tile(home, (N, 1)) + 0.3 * rng.standard_normal((N, backend.info.nu))


def _assert_close(warp_backend, cpu_backend, rows=slice(None)) -> None:
    np.testing.assert_allclose(warp_backend.qpos[rows], cpu_backend.qpos[rows], rtol=0, atol=QPOS_ATOL)
    np.testing.assert_allclose(warp_backend.qvel[rows], cpu_backend.qvel[rows], rtol=0, atol=QVEL_ATOL)
    np.testing.assert_allclose(warp_backend.sensordata[rows], cpu_backend.sensordata[rows],
                               rtol=SENSOR_RTOL, atol=SENSOR_ATOL)


@needs_mjwarp
@pytest.mark.slow
def test_protocol_shapes_and_read_only_views(pair) -> None:
    warp_backend, _ = pair
    info = warp_backend.info
    assert isinstance(warp_backend, Backend) and warp_backend.name == "mjwarp"
    assert warp_backend.dtype == np.float32 and warp_backend.qpos.dtype == np.float32
    assert warp_backend.qpos.shape == (N, info.nq) and warp_backend.qvel.shape == (N, info.nv)
    assert warp_backend.sensordata.shape == (N, info.nsensordata)
    assert warp_backend.sensor("FL_touch").shape == (N, 1)
    assert not warp_backend.qpos.flags.writeable and not warp_backend.sensordata.flags.writeable
    warp_backend.synchronize()  # a lockstep block ends with it: returns once the device is idle


@needs_mjwarp
@pytest.mark.slow
def test_steps_match_the_mujoco_backend_and_report_transfers(pair) -> None:
    warp_backend, cpu_backend = pair
    _reset_both(pair, seed=0)
    _assert_close(warp_backend, cpu_backend)
    rng = np.random.default_rng(1)
    start = warp_backend.qpos.copy()
    for _ in range(5):
        ctrl = _random_ctrl(warp_backend, rng)
        for backend in pair:
            backend.step(ctrl, SUBSTEPS)
        _assert_close(warp_backend, cpu_backend)
        assert warp_backend.timings["physics_ms"] > 0
        assert warp_backend.timings["d2h_ms"] > 0
        assert warp_backend.timings["h2d_ms"] > 0
    assert np.abs(warp_backend.qpos - start).max() > 1e-3  # the robots really moved
    assert warp_backend.sensor("FL_touch").max() > 1.0  # acceleration-stage sensors are computed


@needs_mjwarp
@pytest.mark.slow
def test_partial_reset_and_kick_touch_only_their_rows(pair) -> None:
    warp_backend, cpu_backend = pair
    _reset_both(pair, seed=2)
    ctrl = _random_ctrl(warp_backend, np.random.default_rng(3))
    for backend in pair:
        backend.step(ctrl, SUBSTEPS)
    before = [a.copy() for a in (warp_backend.qpos, warp_backend.qvel, warp_backend.sensordata)]
    qpos, qvel = _start_state(warp_backend, np.random.default_rng(4))
    moved = warp_backend.row_bytes_moved
    for backend in pair:
        backend.reset(np.array([1]), qpos[:1], qvel[:1])
    info = warp_backend.info  # one row crossed the bus each way: id, qpos and qvel up, sensors down
    assert warp_backend.row_bytes_moved - moved == 4 * (1 + info.nq + info.nv + info.nsensordata)
    others = [0, 2, 3]
    for old, new in zip(before, (warp_backend.qpos, warp_backend.qvel, warp_backend.sensordata), strict=True):
        np.testing.assert_array_equal(new[others], old[others])
    np.testing.assert_array_equal(warp_backend.qpos[1], qpos[0].astype(np.float32))
    _assert_close(warp_backend, cpu_backend, rows=[1])

    kick = np.array([[0.5, -0.25]])
    vel_before = warp_backend.sensor("global_linvel").copy()
    moved = warp_backend.row_bytes_moved
    for backend in pair:
        backend.apply_body_velocity_kick(np.array([2]), kick)
    assert warp_backend.row_bytes_moved - moved == 4 * (1 + info.nv + info.nsensordata)
    np.testing.assert_allclose(warp_backend.sensor("global_linvel")[2, :2] - vel_before[2, :2], kick[0],
                               atol=1e-6)
    not_kicked = [0, 1, 3]
    np.testing.assert_array_equal(warp_backend.sensor("global_linvel")[not_kicked], vel_before[not_kicked])
    _assert_close(warp_backend, cpu_backend)
    for backend in pair:  # the device kept every world's state: the next step still matches MuJoCo
        backend.step(ctrl, SUBSTEPS)
    _assert_close(warp_backend, cpu_backend)


@needs_mjwarp
@pytest.mark.slow
def test_bad_input_names_the_problem(pair) -> None:
    warp_backend, _ = pair
    with pytest.raises(ValueError, match="ctrl must have shape"):
        warp_backend.step(np.zeros((N, 3)), SUBSTEPS)
    with pytest.raises(ValueError, match="substeps must be >= 1"):
        warp_backend.step(np.zeros((N, warp_backend.info.nu)), 0)
    with pytest.raises(ValueError, match="reset of 1 rows needs qpos"):
        warp_backend.reset(np.array([0]), np.zeros((1, 3)), np.zeros((1, warp_backend.info.nv)))
    with pytest.raises(IndexError, match=r"env_ids must lie in \[0, 4\)"):
        warp_backend.apply_body_velocity_kick(np.array([7]), np.zeros((1, 2)))
    with pytest.raises(FileNotFoundError, match="nope.xml"):
        make_backend("mjwarp", "nope.xml", num_envs=1, threads=1)


@needs_mjwarp
@pytest.mark.slow
def test_constraint_overflow_raises_instead_of_simulating_wrongly(monkeypatch: pytest.MonkeyPatch) -> None:
    from envruntime.backends import mjwarp_backend

    monkeypatch.setattr(mjwarp_backend, "NJMAX", 4)  # four feet on the floor need 16 rows
    backend = mjwarp_backend.MjwarpBackend(XML_PATH, num_envs=2, threads=1)
    qpos, qvel = backend.info.keyframes["home"]
    backend.reset(np.arange(2), np.tile(qpos, (2, 1)), np.tile(qvel, (2, 1)))
    with pytest.raises(RuntimeError, match=r"overflowed \(NEFC\) in 2 of 2 worlds"):
        for _ in range(50):  # the robot drops onto its feet within a few steps
            backend.step(np.tile(qpos[7:], (2, 1)), SUBSTEPS)
    backend.close()
