"""The motion-tracking Numba kernels (envruntime.kernels.motion_*) against NumPy oracles written
here with rotation matrices, and the adaptive start sampler's statistics."""

from __future__ import annotations

import numpy as np
import pytest
from quats import rotation_matrix as _mat
from quats import unit_quats

from envruntime.kernels import motion_command as cmd
from envruntime.kernels import motion_math as mm
from envruntime.kernels import motion_observation as mobs
from envruntime.kernels import motion_reward as mrew
from envruntime.kernels import motion_termination as mterm
from envruntime.kernels.motion_reset import ROOT_DRAWS, stage_reference_state
from envruntime.tasks.g1_motion_tracking.motion import AdaptiveStartSampler

N, T, B, J = 7, 11, 5, 4
ANCHOR = 2


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(11)


def _angle(ra: np.ndarray, rb: np.ndarray) -> float:
    """Rotation angle between two rotation matrices."""
    return float(np.arccos(np.clip((np.trace(ra @ rb.T) - 1) / 2, -1.0, 1.0)))


def _yaw_mat(r: np.ndarray) -> np.ndarray:
    yaw = np.arctan2(r[1, 0], r[0, 0])
    c, s = np.cos(yaw), np.sin(yaw)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def _two_columns(r: np.ndarray) -> np.ndarray:
    return r[:, :2].reshape(-1)


@pytest.fixture
def scene(rng: np.random.Generator) -> dict:
    """A random clip, random robot sensordata with pos/quat/linvel/angvel columns per body."""
    pos_cols = 3 + 13 * np.arange(B)
    sd = rng.standard_normal((N, 3 + 13 * B + 2))
    sd[:, (pos_cols + 3)[:, None] + np.arange(4)] = unit_quats(rng, N, B)
    return {
        "sd": sd,
        "pos_cols": pos_cols,
        "quat_cols": pos_cols + 3,
        "lin_cols": pos_cols + 7,
        "ang_cols": pos_cols + 10,
        "time_step": rng.integers(0, T, N),
        "body_pos": rng.standard_normal((T, B, 3)),
        "body_quat": unit_quats(rng, T, B),
        "body_lin_vel": rng.standard_normal((T, B, 3)),
        "body_ang_vel": rng.standard_normal((T, B, 3)),
        "joint_pos": rng.standard_normal((T, J)),
        "joint_vel": rng.standard_normal((T, J)),
    }


def _robot(s: dict, r: int, b: int) -> tuple[np.ndarray, np.ndarray]:
    """Position and rotation matrix of robot body ``b`` in env ``r``."""
    p = s["sd"][r, s["pos_cols"][b] : s["pos_cols"][b] + 3]
    q = s["sd"][r, s["quat_cols"][b] : s["quat_cols"][b] + 4]
    return p, _mat(q)


def test_quaternion_math(rng: np.random.Generator) -> None:
    for qa, qb in zip(unit_quats(rng, 20), unit_quats(rng, 20), strict=True):
        v = rng.standard_normal(3)
        np.testing.assert_allclose(_mat(np.array(mm.quat_mul(*qa, *qb))), _mat(qa) @ _mat(qb), atol=1e-12)
        np.testing.assert_allclose(mm.rotate(*qa, *v), _mat(qa) @ v, atol=1e-12)
        np.testing.assert_allclose(_mat(np.array(mm.yaw_quat(*qa))), _yaw_mat(_mat(qa)), atol=1e-12)
        assert mm.quat_error_angle(*qa, *qb) == pytest.approx(_angle(_mat(qa), _mat(qb)), abs=1e-6)
        assert mm.quat_error_angle(*qa, *(-qa)) == pytest.approx(0.0, abs=1e-7)  # q and -q: same rotation
        np.testing.assert_allclose(mm.rotation_first_two_columns(*qa), _two_columns(_mat(qa)), atol=1e-12)


def test_advance_motion_loops_and_fills_the_command(scene: dict) -> None:
    s = scene
    time_step = np.array([0, 5, T - 1, T - 2])
    command = np.zeros((4, 2 * J))
    cmd.advance_motion(time_step, s["joint_pos"], s["joint_vel"], command)
    np.testing.assert_array_equal(time_step, [1, 6, 0, T - 1])
    np.testing.assert_array_equal(command, np.hstack([s["joint_pos"][time_step], s["joint_vel"][time_step]]))


def test_relative_body_poses(scene: dict) -> None:
    s = scene
    pos_rel, quat_rel = np.zeros((N, B, 3)), np.zeros((N, B, 4))
    cmd.relative_body_poses(
        s["time_step"], s["body_pos"], s["body_quat"], ANCHOR, s["sd"], int(s["pos_cols"][ANCHOR]),
        int(s["quat_cols"][ANCHOR]), pos_rel, quat_rel,
    )  # fmt: skip
    for r in range(N):
        t = s["time_step"][r]
        robot_p, robot_r = _robot(s, r, ANCHOR)
        ref_p, ref_r = s["body_pos"][t, ANCHOR], _mat(s["body_quat"][t, ANCHOR])
        delta = _yaw_mat(robot_r @ ref_r.T)
        origin = np.array([robot_p[0], robot_p[1], ref_p[2]])
        for b in range(B):
            expected = origin + delta @ (s["body_pos"][t, b] - ref_p)
            np.testing.assert_allclose(pos_rel[r, b], expected, atol=1e-12)
            np.testing.assert_allclose(_mat(quat_rel[r, b]), delta @ _mat(s["body_quat"][t, b]), atol=1e-12)
        # the re-anchored reference anchor sits at the robot anchor's x, y, at its own height
        np.testing.assert_allclose(pos_rel[r, ANCHOR], [*robot_p[:2], ref_p[2]], atol=1e-12)


def test_failure_statistics_and_cdf() -> None:
    counts = np.zeros(4)
    time_step = np.array([0, 3, 5, 9, 10, 10])  # bins of T=11 over 4: floor(t * 4 / 11)
    failed = np.array([True, True, False, True, True, False])
    cmd.record_failures(time_step, np.array([0, 1, 2, 3, 4, 5]), failed, 11, counts)
    np.testing.assert_array_equal(counts, [1.0, 1.0, 0.0, 2.0])
    rate = np.array([1.0, 1.0, 1.0, 1.0])
    cmd.decay_failure_counts(counts, rate, 0.25)
    np.testing.assert_allclose(rate, [1.0, 1.0, 0.75, 1.25])
    np.testing.assert_array_equal(counts, 0.0)

    rate = np.array([0.0, 3.0, 0.0, 1.0, 0.5])
    kernel = 0.8 ** np.arange(3)
    kernel /= kernel.sum()
    cdf = np.zeros(5)
    cmd.sampling_cdf(rate, 0.1, kernel, cdf)
    padded = np.concatenate([rate + 0.1 / 5, np.full(2, rate[-1] + 0.1 / 5)])  # replicate on the right
    p = np.array([padded[b : b + 3] @ kernel for b in range(5)])
    np.testing.assert_allclose(cdf, np.cumsum(p) / p.sum(), atol=1e-12)


def test_sample_start_frames() -> None:
    cdf = np.array([0.1, 0.1, 0.7, 1.0])
    u = np.array([[0.05, 0.5], [0.1, 0.0], [0.69, 0.99], [0.999, 0.25]])
    rows = np.array([3, 0, 2, 1])
    time_step = np.full(4, -1)
    cmd.sample_start_frames(u, rows, cdf, 21, time_step)
    bins = np.searchsorted(cdf, u[:, 0], side="right")
    expected = ((bins + u[:, 1]) / 4 * 20).astype(np.int64)
    np.testing.assert_array_equal(time_step[rows], expected)
    assert list(bins) == [0, 2, 2, 3]  # an empty bin (1) is never drawn


def test_adaptive_sampler_follows_failures() -> None:
    """No failures: start frames uniform over the bins. Failures concentrated in one bin: most
    starts fall into that bin, the uniform share keeps every other bin alive."""
    frames, fps, n = 250, 50.0, 20000
    sampler = AdaptiveStartSampler(frames, fps, alpha=1.0)
    assert sampler.bins == 6
    rng = np.random.default_rng(0)
    rows = np.arange(n)
    time_step = np.zeros(n, dtype=np.int64)
    no_failures = np.zeros(n, dtype=np.bool_)
    sampler.sample(rng.random((n, 2)), rows, no_failures, time_step)
    share = np.bincount(time_step * 6 // frames, minlength=6) / n
    np.testing.assert_allclose(share, 1 / 6, atol=0.02)

    time_step[:] = 130  # bin 3
    sampler.sample(rng.random((50, 2)), rows[:50], np.ones(n, dtype=np.bool_), time_step)
    sampler.decay()
    np.testing.assert_array_equal(sampler.failure_rate, [0, 0, 0, 50, 0, 0])
    sampler.sample(rng.random((n, 2)), rows, no_failures, time_step)
    share = np.bincount(time_step * 6 // frames, minlength=6) / n
    # expected 0.998 in bin 3; frames drawn at a bin's first 2 % can floor into the bin before
    assert share[2] + share[3] > 0.99 and share[3] > 0.96 and np.all(share > 0)
    sampler.clear()
    assert not sampler.failure_rate.any()


def test_stage_reference_state(scene: dict, rng: np.random.Generator) -> None:
    s = scene
    k, root = 3, 0
    rows = np.array([4, 1, 6])
    u = rng.random((k, ROOT_DRAWS + J))
    lo = -np.linspace(0.1, 1.3, 13)
    hi = np.linspace(0.2, 1.4, 13)
    qadr, dadr = 7 + np.arange(J), 6 + np.arange(J)
    joint_lo, joint_hi = np.full(J, -0.5), np.full(J, 0.5)
    qpos, qvel = np.zeros((k, 7 + J)), np.zeros((k, 6 + J))
    stage_reference_state(
        u, rows, s["time_step"], root, s["body_pos"], s["body_quat"], s["body_lin_vel"], s["body_ang_vel"],
        s["joint_pos"], s["joint_vel"], qadr, dadr, lo, hi, joint_lo, joint_hi, qpos, qvel,
    )  # fmt: skip
    for i, r in enumerate(rows):
        t = s["time_step"][r]
        d = lo[:12] + (hi[:12] - lo[:12]) * u[i, :12]
        np.testing.assert_allclose(qpos[i, :3], s["body_pos"][t, root] + d[:3], atol=1e-12)
        roll, pitch, yaw = d[3:6]
        rx = np.array([[1, 0, 0], [0, np.cos(roll), -np.sin(roll)], [0, np.sin(roll), np.cos(roll)]])
        ry = np.array([[np.cos(pitch), 0, np.sin(pitch)], [0, 1, 0], [-np.sin(pitch), 0, np.cos(pitch)]])
        rz = np.array([[np.cos(yaw), -np.sin(yaw), 0], [np.sin(yaw), np.cos(yaw), 0], [0, 0, 1]])
        rot = rz @ ry @ rx @ _mat(s["body_quat"][t, root])
        np.testing.assert_allclose(_mat(qpos[i, 3:7]), rot, atol=1e-12)
        np.testing.assert_allclose(qvel[i, :3], s["body_lin_vel"][t, root] + d[6:9], atol=1e-12)
        np.testing.assert_allclose(qvel[i, 3:6], rot.T @ (s["body_ang_vel"][t, root] + d[9:12]), atol=1e-12)
        joints = s["joint_pos"][t] + lo[12] + (hi[12] - lo[12]) * u[i, 12:]
        np.testing.assert_allclose(qpos[i, 7:], np.clip(joints, -0.5, 0.5), atol=1e-12)
        np.testing.assert_array_equal(qvel[i, 6:], s["joint_vel"][t])


@pytest.mark.slow
def test_observation_kernels(scene: dict) -> None:
    s = scene
    rows = np.array([5, 0, 3])
    apos, aquat = int(s["pos_cols"][ANCHOR]), int(s["quat_cols"][ANCHOR])
    pos_b, ori_b = np.zeros((3, 3)), np.zeros((3, 6))
    bodies_p, bodies_o = np.zeros((3, 3 * B)), np.zeros((3, 6 * B))
    mobs.ref_anchor_pos_b(rows, s["sd"], apos, aquat, s["time_step"], s["body_pos"], ANCHOR, pos_b)
    mobs.ref_anchor_ori_b(rows, s["sd"], aquat, s["time_step"], s["body_quat"], ANCHOR, ori_b)
    mobs.body_pos_b(rows, s["sd"], apos, aquat, s["pos_cols"], bodies_p)
    mobs.body_ori_b(rows, s["sd"], aquat, s["quat_cols"], bodies_o)
    for i, r in enumerate(rows):
        t = s["time_step"][r]
        anchor_p, anchor_r = _robot(s, r, ANCHOR)
        np.testing.assert_allclose(pos_b[i], anchor_r.T @ (s["body_pos"][t, ANCHOR] - anchor_p), atol=1e-12)
        expected = _two_columns(anchor_r.T @ _mat(s["body_quat"][t, ANCHOR]))
        np.testing.assert_allclose(ori_b[i], expected, atol=1e-12)
        for b in range(B):
            p, rot = _robot(s, r, b)
            np.testing.assert_allclose(
                bodies_p[i, 3 * b : 3 * b + 3], anchor_r.T @ (p - anchor_p), atol=1e-12
            )
            np.testing.assert_allclose(
                bodies_o[i, 6 * b : 6 * b + 6], _two_columns(anchor_r.T @ rot), atol=1e-12
            )


def test_reward_kernels(scene: dict, rng: np.random.Generator) -> None:
    s = scene
    apos, aquat = int(s["pos_cols"][ANCHOR]), int(s["quat_cols"][ANCHOR])
    pos_rel, quat_rel = rng.standard_normal((N, B, 3)), unit_quats(rng, N, B)
    out = {name: np.zeros(N) for name in ("ap", "ao", "bp", "bo", "lv", "av")}
    mrew.anchor_tracking(s["sd"], apos, s["time_step"], s["body_pos"], ANCHOR, False, 0.3, out["ap"])
    mrew.anchor_tracking(s["sd"], aquat, s["time_step"], s["body_quat"], ANCHOR, True, 0.4, out["ao"])
    mrew.body_pose_tracking(s["sd"], s["pos_cols"], pos_rel, False, 0.3, out["bp"])
    mrew.body_pose_tracking(s["sd"], s["quat_cols"], quat_rel, True, 0.4, out["bo"])
    mrew.body_vel_tracking(s["sd"], s["lin_cols"], s["time_step"], s["body_lin_vel"], 1.0, out["lv"])
    mrew.body_vel_tracking(s["sd"], s["ang_cols"], s["time_step"], s["body_ang_vel"], 3.14, out["av"])
    for r in range(N):
        t = s["time_step"][r]
        anchor_p, anchor_r = _robot(s, r, ANCHOR)
        poses = [_robot(s, r, b) for b in range(B)]
        lin_err = s["body_lin_vel"][t] - s["sd"][r, s["lin_cols"][:, None] + np.arange(3)]
        ang_err = s["body_ang_vel"][t] - s["sd"][r, s["ang_cols"][:, None] + np.arange(3)]
        body_pos_err = [np.sum((pos_rel[r, b] - poses[b][0]) ** 2) for b in range(B)]
        body_ori_err = [_angle(_mat(quat_rel[r, b]), poses[b][1]) ** 2 for b in range(B)]
        expected = {
            "ap": np.exp(-np.sum((s["body_pos"][t, ANCHOR] - anchor_p) ** 2) / 0.3**2),
            "ao": np.exp(-(_angle(_mat(s["body_quat"][t, ANCHOR]), anchor_r) ** 2) / 0.4**2),
            "bp": np.exp(-np.mean(body_pos_err) / 0.3**2),
            "bo": np.exp(-np.mean(body_ori_err) / 0.4**2),
            "lv": np.exp(-np.mean(np.sum(lin_err**2, axis=1)) / 1.0**2),
            "av": np.exp(-np.mean(np.sum(ang_err**2, axis=1)) / 3.14**2),
        }
        for name, value in expected.items():
            assert out[name][r] == pytest.approx(value, rel=1e-6, abs=1e-12), name


def test_termination_kernels(scene: dict, rng: np.random.Generator) -> None:
    s = scene
    apos, aquat = int(s["pos_cols"][ANCHOR]), int(s["quat_cols"][ANCHOR])
    pos_rel = rng.standard_normal((N, B, 3))
    ids = np.array([0, 3])
    height, gravity, bodies = (np.zeros(N, dtype=np.bool_) for _ in range(3))
    mterm.anchor_error_exceeds(s["sd"], apos, s["time_step"], s["body_pos"], ANCHOR, False, 0.5, height)
    mterm.anchor_error_exceeds(s["sd"], aquat, s["time_step"], s["body_quat"], ANCHOR, True, 0.8, gravity)
    mterm.body_height_exceeds(s["sd"], s["pos_cols"], ids, pos_rel, 0.6, bodies)
    g = np.array([0.0, 0.0, -1.0])
    errors = {"h": [], "g": [], "b": []}
    for r in range(N):
        t = s["time_step"][r]
        anchor_p, anchor_r = _robot(s, r, ANCHOR)
        errors["h"].append(abs(s["body_pos"][t, ANCHOR, 2] - anchor_p[2]))
        errors["g"].append(abs((_mat(s["body_quat"][t, ANCHOR]).T @ g)[2] - (anchor_r.T @ g)[2]))
        errors["b"].append(max(abs(pos_rel[r, b, 2] - _robot(s, r, b)[0][2]) for b in ids))
    np.testing.assert_array_equal(height, np.array(errors["h"]) > 0.5)
    np.testing.assert_array_equal(gravity, np.array(errors["g"]) > 0.8)
    np.testing.assert_array_equal(bodies, np.array(errors["b"]) > 0.6)
    assert 0 < bodies.sum() < N and 0 < height.sum() < N  # both outcomes are exercised
