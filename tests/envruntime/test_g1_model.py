"""The project's G1 MJCF: structure, public figures, standing, contacts and sensors, in MuJoCo
and in MotrixSim 0.10.1."""

from __future__ import annotations

import motrixsim
import mujoco
import numpy as np
import pytest

from envruntime.robots import g1

# Poses (joint -> angle, over the home keyframe) that press a hand into the pelvis and the shins together.
HAND_ON_PELVIS = {"left_shoulder_roll": -0.3, "left_shoulder_yaw": -0.8, "left_elbow": 1.0}
SHINS_CROSSED = {"left_hip_roll": -0.3, "right_hip_roll": 0.3}


@pytest.fixture(scope="module")
def model() -> mujoco.MjModel:
    return mujoco.MjModel.from_xml_path(str(g1.G1_XML))


@pytest.fixture(scope="module")
def mx_model() -> motrixsim.SceneModel:
    try:
        motrixsim.init_thread_pool(1)
    except RuntimeError as err:  # the process-wide pool can be made once only
        if "already initialized" not in str(err):
            raise
    return motrixsim.load_model(str(g1.G1_XML))


def _posed(model: mujoco.MjModel, pose: dict[str, float] | None = None) -> np.ndarray:
    """qpos of the home keyframe with the joints of ``pose`` (names without ``_joint``) changed."""
    qpos = model.key(g1.HOME_KEYFRAME).qpos.copy()
    for joint, angle in (pose or {}).items():
        qpos[model.jnt_qposadr[model.joint(f"{joint}_joint").id]] = angle
    return qpos


def _mj_data(model: mujoco.MjModel, qpos: np.ndarray, steps: int = 0) -> mujoco.MjData:
    """MuJoCo data at ``qpos`` with the servos holding it, after ``steps`` steps (forward if 0)."""
    data = mujoco.MjData(model)
    data.qpos[:] = qpos
    data.ctrl[:] = qpos[7:]
    mujoco.mj_forward(model, data)
    for _ in range(steps):
        mujoco.mj_step(model, data)
    return data


def _mx_data(mx_model: motrixsim.SceneModel, qpos: np.ndarray, steps: int = 0) -> motrixsim.SceneData:
    """A MotrixSim batch of len(qpos) envs at ``qpos`` (N, 36), servos holding it, after ``steps`` steps."""
    data = motrixsim.SceneData(mx_model, batch=[len(qpos)])
    # MotrixSim's free-joint quaternion is x-y-z-w, MuJoCo's w-x-y-z
    dof_pos = np.concatenate([qpos[:, :3], qpos[:, 4:7], qpos[:, 3:4], qpos[:, 7:]], 1)
    data.set_dof_pos(dof_pos.astype(np.float32), mx_model)
    mx_model.forward_kinematic(data)
    data.actuator_ctrls = qpos[:, 7:].astype(np.float32)
    for _ in range(steps):
        mx_model.step(data)
    return data


# --- MuJoCo -------------------------------------------------------------------------------------


def test_structure_matches_the_published_names(model: mujoco.MjModel) -> None:
    assert (model.nq, model.nv, model.nu) == (36, 35, 29)
    assert model.opt.timestep == pytest.approx(0.005)
    assert tuple(model.joint(j).name for j in range(1, model.njnt)) == g1.JOINT_NAMES
    assert tuple(model.actuator(a).name for a in range(model.nu)) == g1.ACTUATOR_NAMES
    driven = tuple(model.joint(model.actuator_trnid[a, 0]).name for a in range(model.nu))
    assert driven == g1.JOINT_NAMES
    for body in (*g1.TRACKED_BODIES, g1.ANCHOR_BODY):
        model.body(body)  # raises KeyError if missing


def test_every_published_sensor_exists_with_its_width(model: mujoco.MjModel) -> None:
    widths = {model.sensor(s).name: int(model.sensor_dim[s]) for s in range(model.nsensor)}
    for body in g1.TRACKED_BODIES:
        for kind in g1.BODY_SENSOR_KINDS:
            assert widths[g1.body_sensor(body, kind)] == (4 if kind == "quat" else 3)
    for where in ("pelvis", "torso"):
        for kind, width in (("gyro", 3), ("acc", 3), ("linvel", 3), ("quat", 4)):
            assert widths[g1.imu_sensor(where, kind)] == width
    for name in (*g1.FOOT_TOUCH_SENSORS, *g1.SELF_COLLISION_TOUCH_SENSORS):
        assert widths[name] == 1
    for name in (*g1.FOOT_POS_SENSORS, *g1.FOOT_LINVEL_SENSORS):
        assert widths[name] == 3
    with pytest.raises(ValueError, match="not a tracked body"):
        g1.body_sensor("head", "pos")
    with pytest.raises(ValueError, match="no IMU sensor"):
        g1.imu_sensor("knee", "gyro")  # type: ignore[arg-type]


def test_public_figures(model: mujoco.MjModel) -> None:
    assert 33.0 < model.body_mass.sum() < 37.0
    limits = dict(zip(g1.ACTUATOR_NAMES, model.actuator_forcerange[:, 1], strict=True))
    expected = {"left_hip_pitch": 88, "right_hip_roll": 139, "left_knee": 139, "right_ankle_pitch": 50,
                "waist_yaw": 88, "waist_roll": 50, "waist_pitch": 50, "left_shoulder_pitch": 25,
                "right_elbow": 25, "left_wrist_roll": 25, "right_wrist_pitch": 5, "left_wrist_yaw": 5}
    for name, torque in expected.items():
        assert limits[name] == torque, name
    assert np.all(model.actuator_forcelimited == 1)
    np.testing.assert_allclose(model.actuator_ctrlrange, model.jnt_range[1:])  # targets span the joint ranges
    assert np.all(model.dof_armature[6:] > 0)
    data = _mj_data(model, _posed(model))
    hip, knee, ankle = (data.xpos[model.body(b).id]
                        for b in ("left_hip_roll_link", "left_knee_link", "left_ankle_pitch_link"))
    assert 0.28 < np.linalg.norm(knee - hip) < 0.34 and 0.28 < np.linalg.norm(ankle - knee) < 0.34
    assert data.qpos[2] == pytest.approx(0.79, abs=0.02)


def test_home_puts_soles_on_the_floor_and_only_they_touch(model: mujoco.MjModel) -> None:
    data = _mj_data(model, _posed(model))
    for sole in g1.FOOT_POS_SENSORS:
        assert abs(data.sensor(sole).data[2]) < 1e-3
    data = _mj_data(model, _posed(model), steps=10)
    floor = model.geom("floor").id
    pairs = {tuple(sorted((int(c.geom[0]), int(c.geom[1])))) for c in data.contact[: data.ncon]}
    assert pairs == {tuple(sorted((floor, model.geom(f).id))) for f in g1.FEET}


def test_home_stands_on_its_servos_for_two_seconds(model: mujoco.MjModel) -> None:
    data = _mj_data(model, _posed(model))
    z0 = data.qpos[2]
    heights = []
    for _ in range(round(2.0 / model.opt.timestep)):
        mujoco.mj_step(model, data)
        heights.append(data.qpos[2])
    assert np.max(np.abs(np.array(heights) - z0)) < 0.03
    assert 2 * np.arccos(min(1.0, abs(data.qpos[3]))) < 0.1  # tilt [rad]
    feet = sum(float(data.sensor(s).data[0]) for s in g1.FOOT_TOUCH_SENSORS)
    assert feet == pytest.approx(model.body_mass.sum() * 9.81, rel=0.05)
    assert sum(float(data.sensor(s).data[0]) for s in g1.SELF_COLLISION_TOUCH_SENSORS) == 0.0


def test_self_collisions_show_on_touch_sensors(model: mujoco.MjModel) -> None:
    def touch(pose: dict[str, float]) -> dict[str, float]:
        data = _mj_data(model, _posed(model, pose), steps=1)
        return {s: float(data.sensor(s).data[0]) for s in g1.SELF_COLLISION_TOUCH_SENSORS}

    hand = touch(HAND_ON_PELVIS)
    assert hand["left_hand_touch"] > 0 and hand["right_hand_touch"] == 0 == hand["left_shin_touch"]
    shins = touch(SHINS_CROSSED)
    assert shins["left_shin_touch"] > 0 and shins["right_shin_touch"] > 0


def test_frame_sensors_report_body_origins_in_world(model: mujoco.MjModel) -> None:
    data = _mj_data(model, _posed(model, {"waist_yaw": 0.3, "left_elbow": 0.5}))
    data.qvel[6:] = np.linspace(-1, 1, model.nv - 6)
    mujoco.mj_forward(model, data)
    vel = np.zeros(6)
    for body in g1.TRACKED_BODIES:
        b = model.body(body).id
        np.testing.assert_allclose(data.sensor(g1.body_sensor(body, "pos")).data, data.xpos[b], atol=1e-9)
        np.testing.assert_allclose(data.sensor(g1.body_sensor(body, "quat")).data, data.xquat[b], atol=1e-9)
        mujoco.mj_objectVelocity(model, data, mujoco.mjtObj.mjOBJ_XBODY, b, vel, 0)
        np.testing.assert_allclose(data.sensor(g1.body_sensor(body, "angvel")).data, vel[:3], atol=1e-9)
        np.testing.assert_allclose(data.sensor(g1.body_sensor(body, "linvel")).data, vel[3:], atol=1e-9)


# --- MotrixSim ----------------------------------------------------------------------------------


def test_motrix_loads_the_same_structure(model: mujoco.MjModel, mx_model: motrixsim.SceneModel) -> None:
    assert (mx_model.num_dof_pos, mx_model.num_dof_vel, mx_model.num_actuators) == (36, 35, 29)
    assert tuple(mx_model.actuator_names) == g1.ACTUATOR_NAMES
    assert tuple(mx_model.joint_names) == g1.JOINT_NAMES
    assert [k.name for k in mx_model.keyframes] == [g1.HOME_KEYFRAME]
    assert mx_model.num_sensors == model.nsensor


def test_motrix_reads_every_sensor_with_mujocos_width(model: mujoco.MjModel,
                                                      mx_model: motrixsim.SceneModel) -> None:
    data = _mx_data(mx_model, _posed(model)[None], steps=1)
    for s in range(model.nsensor):
        name = model.sensor(s).name
        assert mx_model.get_sensor_value(name, data).shape == (1, model.sensor_dim[s]), name


def test_motrix_home_stands_for_two_seconds(model: mujoco.MjModel, mx_model: motrixsim.SceneModel) -> None:
    home = np.tile(_posed(model), (2, 1))
    data = _mx_data(mx_model, home, steps=round(2.0 / model.opt.timestep))
    np.testing.assert_allclose(data.dof_pos[:, 2], home[:, 2], atol=0.03)
    assert np.all(np.abs(data.dof_pos[:, 6]) > np.cos(0.05))  # quaternion w: tilt < 0.1 rad
    feet = sum(mx_model.get_sensor_value(s, data)[:, 0] for s in g1.FOOT_TOUCH_SENSORS)
    np.testing.assert_allclose(feet, model.body_mass.sum() * 9.81, rtol=0.05)


def test_motrix_frame_sensors_agree_with_mujoco(model: mujoco.MjModel,
                                                mx_model: motrixsim.SceneModel) -> None:
    pose = {"waist_yaw": 0.4, "left_shoulder_pitch": -0.6, "right_elbow": 0.3, "left_knee": 0.9}
    qpos = _posed(model, pose)
    mj_data = _mj_data(model, qpos)
    data = _mx_data(mx_model, qpos[None])
    for body in g1.TRACKED_BODIES:
        pos, quat = g1.body_sensor(body, "pos"), g1.body_sensor(body, "quat")
        mx_pos = mx_model.get_sensor_value(pos, data)[0]
        np.testing.assert_allclose(mx_pos, mj_data.sensor(pos).data, atol=1e-4)
        wxyz = np.roll(mx_model.get_sensor_value(quat, data)[0], 1)  # MotrixSim reports x-y-z-w
        assert abs(np.dot(wxyz, mj_data.sensor(quat).data)) == pytest.approx(1.0, abs=1e-4), body


def test_motrix_self_collisions_show_on_touch_sensors(model: mujoco.MjModel,
                                                      mx_model: motrixsim.SceneModel) -> None:
    poses = np.stack([_posed(model, HAND_ON_PELVIS), _posed(model, SHINS_CROSSED)])
    data = _mx_data(mx_model, poses, steps=1)
    touch = {s: mx_model.get_sensor_value(s, data)[:, 0] for s in g1.SELF_COLLISION_TOUCH_SENSORS}
    assert touch["left_hand_touch"][0] > 0
    assert touch["right_hand_touch"][0] == 0 == touch["left_shin_touch"][0]
    assert touch["left_shin_touch"][1] > 0 and touch["right_shin_touch"][1] > 0
