"""The generated G1 reference clip: format, kinematic consistency with the model, determinism, CLI."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import mujoco
import numpy as np
import pytest

from envruntime.robots import g1
from envruntime.tasks.g1_motion_tracking.clip import G1_MOTION_NPZ, MotionClip, load_clip
from envruntime.tasks.g1_motion_tracking.generate_clip import MotionSpec, generate_clip, main


@pytest.fixture(scope="module")
def clip() -> MotionClip:
    return generate_clip()


@pytest.fixture(scope="module")
def model() -> mujoco.MjModel:
    return mujoco.MjModel.from_xml_path(str(g1.G1_XML))


def test_shapes_names_and_timing(clip: MotionClip) -> None:
    assert clip.fps == 50 and clip.num_frames == 250 and clip.duration_s == pytest.approx(5.0)
    assert clip.joint_names == g1.JOINT_NAMES and clip.body_names == g1.TRACKED_BODIES
    t = clip.num_frames
    assert clip.joint_pos.shape == clip.joint_vel.shape == (t, 29)
    assert clip.body_pos_w.shape == clip.body_lin_vel_w.shape == clip.body_ang_vel_w.shape == (t, 14, 3)
    assert clip.body_quat_w.shape == (t, 14, 4)


def test_quaternions_are_unit(clip: MotionClip) -> None:
    np.testing.assert_allclose(np.linalg.norm(clip.body_quat_w, axis=-1), 1.0, atol=1e-9)


def test_joints_stay_inside_their_ranges_and_move(clip: MotionClip, model: mujoco.MjModel) -> None:
    ranges = np.array([model.jnt_range[model.joint(j).id] for j in g1.JOINT_NAMES])
    assert np.all(clip.joint_pos > ranges[:, 0]) and np.all(clip.joint_pos < ranges[:, 1])
    assert np.all(np.ptp(clip.joint_pos, axis=0) > 0.05)  # every joint takes part


def test_poses_are_the_models_forward_kinematics_with_a_sole_on_the_floor(
        clip: MotionClip, model: mujoco.MjModel) -> None:
    data = mujoco.MjData(model)
    qadr = [model.jnt_qposadr[model.joint(j).id] for j in g1.JOINT_NAMES]
    for t in range(0, clip.num_frames, 10):
        data.qpos[:3], data.qpos[3:7] = clip.body_pos_w[t, 0], clip.body_quat_w[t, 0]
        data.qpos[qadr] = clip.joint_pos[t]
        mujoco.mj_forward(model, data)
        bodies = [model.body(b).id for b in g1.TRACKED_BODIES]
        np.testing.assert_allclose(data.xpos[bodies], clip.body_pos_w[t], atol=1e-9)
        same_rotation = np.abs(np.sum(data.xquat[bodies] * clip.body_quat_w[t], -1))
        np.testing.assert_allclose(same_rotation, 1.0, atol=1e-9)
        soles = [data.sensor(s).data[2] for s in g1.FOOT_POS_SENSORS]
        assert -1e-9 < min(soles) < 2e-3  # the sole box's lowest corner is at z = 0, its centre just above


def test_velocities_match_the_models_own_at_the_clip_state(clip: MotionClip, model: mujoco.MjModel) -> None:
    """Set qpos/qvel from the clip and compare MuJoCo's analytic body velocities (frame sensors)
    with the clip's finite differences; a one-frame shift would miss by >10x the tolerance."""
    data = mujoco.MjData(model)
    qadr = [model.jnt_qposadr[model.joint(j).id] for j in g1.JOINT_NAMES]
    dadr = [model.jnt_dofadr[model.joint(j).id] for j in g1.JOINT_NAMES]
    assert np.allclose(clip.body_quat_w[:, 0], [1, 0, 0, 0])  # pelvis upright: base qvel = its lin vel
    for t in (0, 1, 37, 124, 249):  # includes both ends of the loop
        data.qpos[:3], data.qpos[3:7] = clip.body_pos_w[t, 0], [1, 0, 0, 0]
        data.qpos[qadr] = clip.joint_pos[t]
        data.qvel[:] = 0.0
        data.qvel[:3], data.qvel[dadr] = clip.body_lin_vel_w[t, 0], clip.joint_vel[t]
        mujoco.mj_forward(model, data)
        for b, body in enumerate(g1.TRACKED_BODIES):
            lin = data.sensor(g1.body_sensor(body, "linvel")).data
            ang = data.sensor(g1.body_sensor(body, "angvel")).data
            np.testing.assert_allclose(clip.body_lin_vel_w[t, b], lin, atol=0.02, err_msg=f"{body} frame {t}")
            np.testing.assert_allclose(clip.body_ang_vel_w[t, b], ang, atol=0.05, err_msg=f"{body} frame {t}")


def test_velocities_are_central_differences_over_the_loop(clip: MotionClip) -> None:
    """The documented definition, x[t+1] - x[t-1] = 2 dt v[t] with frame -1 = frame T-1."""
    span = 2 / clip.fps
    for pos, vel in ((clip.joint_pos, clip.joint_vel), (clip.body_pos_w, clip.body_lin_vel_w)):
        np.testing.assert_allclose(np.roll(pos, -1, 0) - np.roll(pos, 1, 0), span * vel, atol=1e-12)


def test_generation_is_deterministic(clip: MotionClip) -> None:
    again = generate_clip()
    for field in dataclasses.fields(MotionClip):
        np.testing.assert_array_equal(getattr(again, field.name), getattr(clip, field.name))


def test_shipped_clip_is_the_current_generation(clip: MotionClip) -> None:
    shipped = load_clip(G1_MOTION_NPZ)
    assert shipped.fps == clip.fps and shipped.body_names == clip.body_names
    for name in ("joint_pos", "joint_vel", "body_pos_w", "body_quat_w", "body_lin_vel_w", "body_ang_vel_w"):
        np.testing.assert_allclose(getattr(shipped, name), getattr(clip, name), atol=1e-5, err_msg=name)


def test_save_load_round_trip_and_bad_files(clip: MotionClip, tmp_path: Path) -> None:
    path = tmp_path / "clip.npz"
    clip.save(path)
    loaded = load_clip(path)
    assert loaded.joint_names == clip.joint_names and loaded.body_pos_w.dtype == np.float32
    with np.load(path) as npz:
        arrays = {k: npz[k] for k in npz.files if k != "body_ang_vel_w"}
    np.savez(tmp_path / "partial.npz", **arrays)
    with pytest.raises(ValueError, match="lacks body_ang_vel_w"):
        load_clip(tmp_path / "partial.npz")
    with pytest.raises(ValueError, match=r"joint_vel has shape \(250, 28\)"):
        dataclasses.replace(clip, joint_vel=clip.joint_vel[:, :28])


def test_spec_rejects_a_clip_that_cannot_loop() -> None:
    with pytest.raises(ValueError, match="whole number of step periods"):
        MotionSpec(seconds=4.5)
    with pytest.raises(ValueError, match="must be > 0"):
        MotionSpec(fps=0)


def test_cli_writes_a_clip_and_exits_2_on_bad_arguments(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "short.npz"
    assert main(["--out", str(out), "--seconds", "2", "--fps", "25"]) == 0
    assert load_clip(out).num_frames == 50
    with pytest.raises(SystemExit) as exit_info:
        main(["--out", str(out), "--seconds", "2.5"])
    assert exit_info.value.code == 2
    assert "whole number of step periods" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        main(["--out", str(tmp_path / "missing" / "x.npz")])
    assert exit_info.value.code == 2
