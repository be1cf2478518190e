"""Every Numba kernel of envruntime.kernels against a plain NumPy oracle written here."""

from __future__ import annotations

import numpy as np
import pytest
from quats import rotation_matrix, unit_quats

from envruntime.kernels import command as cmd
from envruntime.kernels import observation as obs
from envruntime.kernels import reset, scalar
from envruntime.kernels import reward as rew
from envruntime.kernels import termination as term
from envruntime.kernels.action import joint_position_targets

N = 9


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(7)


def _gravity(q: np.ndarray) -> np.ndarray:
    return rotation_matrix(q).T @ np.array([0.0, 0.0, -1.0])


def test_scalar_quaternion_helpers(rng: np.random.Generator) -> None:
    for q in unit_quats(rng, 20):
        v = rng.standard_normal(3)
        np.testing.assert_allclose(scalar.rotate_inverse(*q, *v), rotation_matrix(q).T @ v, atol=1e-12)
        np.testing.assert_allclose(scalar.projected_gravity(*q), _gravity(q), atol=1e-12)
        rot = rotation_matrix(q)
        assert scalar.yaw_of(*q) == pytest.approx(np.arctan2(rot[1, 0], rot[0, 0]), abs=1e-12)


def test_scalar_helpers() -> None:
    for a in (-7.0, -np.pi + 0.1, 0.3, 4.0, 10.0):
        assert scalar.wrap_to_pi(a) == pytest.approx(np.angle(np.exp(1j * a)), abs=1e-12)
    assert scalar.exp_kernel(0.5, 0.5) == pytest.approx(np.exp(-2.0))
    assert scalar.uniform(-2.0, 4.0, 0.25) == pytest.approx(-0.5)
    assert scalar.clamp(3.0, -1.0, 1.0) == 1.0 and scalar.clamp(-3.0, -1.0, 1.0) == -1.0
    key, u = np.uint64(7), scalar.noise_uniform(np.uint64(7), 3)
    noisy = (1.0 + 0.5 * (2 * u - 1)) * 2.0
    assert scalar.observe(1.0, 0.5, key, 3, -10.0, 10.0, 2.0) == pytest.approx(noisy)
    assert scalar.observe(1.0, 0.5, key, 3, 1.9, 10.0, 2.0) == pytest.approx(3.8)
    assert scalar.observe(1.0, 0.0, key, 3, 1.2, 10.0, 2.0) == scalar.clip_scale(1.0, 1.2, 10.0, 2.0) == 2.4


def test_gather_and_flags(rng: np.random.Generator) -> None:
    src = rng.standard_normal((N, 10))
    rows = np.array([5, 0, 7])
    cols = np.array([9, 2, 4])
    offset = rng.standard_normal(3)
    out = np.zeros((3, 3))
    obs.gather_columns(src, rows, cols, offset, out)
    np.testing.assert_array_equal(out, src[rows][:, cols] - offset)
    flags = np.zeros((3, 3))
    obs.threshold_flags(src, rows, cols, 0.2, flags)
    np.testing.assert_array_equal(flags, (src[rows][:, cols] > 0.2).astype(float))


def test_projected_gravity_rows(rng: np.random.Generator) -> None:
    src = np.zeros((N, 7))
    src[:, 3:7] = unit_quats(rng, N)
    rows = np.arange(N)[::-1].copy()
    out = np.zeros((N, 3))
    obs.projected_gravity_rows(src, rows, 3, out)
    np.testing.assert_allclose(out, [_gravity(src[r, 3:7]) for r in rows], atol=1e-12)


SPLITMIX_SEED_0 = (0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F)  # its published first outputs


def _noise_uniforms(key: int, k: int, dim: int) -> np.ndarray:
    """SplitMix64 at states ``key + (i * dim + c + 1) * gamma``, top 53 bits: draws (k, dim)."""
    counters = np.arange(k * dim, dtype=np.uint64).reshape(k, dim)
    z = np.uint64(key) + (counters + np.uint64(1)) * np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)).astype(np.float64) * 2.0**-53


def test_noise_uniform_is_splitmix64() -> None:
    assert [scalar.noise_uniform(np.uint64(0), c) for c in range(3)] == [
        (v >> 11) * 2.0**-53 for v in SPLITMIX_SEED_0
    ]
    key = np.uint64(2**64 - 5)  # the state wraps around
    draws = [scalar.noise_uniform(key, c) for c in range(40)]
    np.testing.assert_array_equal(draws, _noise_uniforms(int(key), 1, 40)[0])


def test_noise_uniforms_are_uniform_and_each_key_its_own_stream() -> None:
    u = _noise_uniforms(12345, 1000, 100).ravel()
    counts, _ = np.histogram(u, bins=10, range=(0.0, 1.0))
    expected = u.size / 10
    assert ((counts - expected) ** 2 / expected).sum() < 27.9  # chi-square, 9 d.o.f., p = 0.001
    assert abs(np.corrcoef(u[:-1], u[1:])[0, 1]) < 0.01
    assert abs(np.corrcoef(u, _noise_uniforms(12346, 1000, 100).ravel())[0, 1]) < 0.01


def test_postprocess_rows_noise_clip_scale_and_history(rng: np.random.Generator) -> None:
    dim, history = 4, 3
    amp = np.array([0.0, 0.5, 0.5, 0.0])
    lo, hi = np.array([-np.inf, -0.2, -np.inf, -np.inf]), np.array([np.inf, 0.2, np.inf, np.inf])
    scale = np.array([1.0, 2.0, 1.0, 0.5])
    out = np.zeros((N, dim * history), dtype=np.float32)
    fresh = np.ones(N, dtype=np.bool_)
    frames = []
    for _ in range(4):
        raw, key = rng.standard_normal((N, dim)), rng.integers(0, 2**64, dtype=np.uint64)
        obs.postprocess_rows(raw, np.arange(N), key, amp, lo, hi, scale, fresh, out)
        u = _noise_uniforms(int(key), N, dim)
        frames.append((np.clip(raw + amp * (2 * u - 1), lo, hi) * scale).astype(np.float32))
    assert not fresh.any()
    np.testing.assert_allclose(out, np.concatenate(frames[-3:], axis=1), rtol=1e-6)
    # a reset row gets its new frame in every slot; the others keep shifting
    fresh[2] = True
    raw, key = rng.standard_normal((1, dim)), rng.integers(0, 2**64, dtype=np.uint64)
    before = out.copy()
    obs.postprocess_rows(raw, np.array([2]), key, amp, lo, hi, scale, fresh, out)
    u = _noise_uniforms(int(key), 1, dim)
    frame = (np.clip(raw + amp * (2 * u - 1), lo, hi) * scale).astype(np.float32)[0]
    np.testing.assert_allclose(out[2], np.tile(frame, history), rtol=1e-6)
    np.testing.assert_array_equal(np.delete(out, 2, axis=0), np.delete(before, 2, axis=0))


def _sensor_block(rng: np.random.Generator) -> np.ndarray:
    sd = rng.standard_normal((N, 30))
    sd[:, 10:14] = unit_quats(rng, N)
    return sd


def test_tracking_and_upright_rewards(rng: np.random.Generator) -> None:
    sd, command, out = _sensor_block(rng), rng.standard_normal((N, 3)), np.zeros(N)
    rew.lin_vel_xy_tracking(command, sd, 0, 0.5, out)
    np.testing.assert_allclose(out, np.exp(-((command[:, :2] - sd[:, 0:2]) ** 2).sum(1) / 0.25))
    rew.ang_vel_z_tracking(command, sd, 3, 0.7, out)
    np.testing.assert_allclose(out, np.exp(-((command[:, 2] - sd[:, 5]) ** 2) / 0.49))
    rew.upright(sd, 10, 0.3, out)
    g = np.array([_gravity(q) for q in sd[:, 10:14]])
    np.testing.assert_allclose(out, np.exp(-(g[:, :2] ** 2).sum(1) / 0.09))


def test_joint_rewards(rng: np.random.Generator) -> None:
    qpos, adr = rng.standard_normal((N, 19)), np.arange(7, 19)
    default, out = rng.standard_normal(12), np.zeros(N)
    rew.posture(qpos, adr, default, 0.8, out)
    np.testing.assert_allclose(out, np.exp(-((qpos[:, 7:] - default) ** 2).sum(1) / 0.64))
    lo, hi = -0.5 * np.ones(12), 0.5 * np.ones(12)
    rew.joint_limits(qpos, adr, lo, hi, out)
    q = qpos[:, 7:]
    np.testing.assert_allclose(out, (np.maximum(lo - q, 0) + np.maximum(q - hi, 0)).sum(1))
    action = rng.standard_normal((N, 12)).astype(np.float32)
    prev = rng.standard_normal((N, 12)).astype(np.float32)
    rew.action_rate(action, prev, out)
    np.testing.assert_allclose(out, ((action.astype(float) - prev.astype(float)) ** 2).sum(1))


def test_foot_rewards(rng: np.random.Generator) -> None:
    sd, out = _sensor_block(rng), np.zeros(N)
    z_cols, vel_cols, touch_cols = np.array([2, 5, 8, 11]), np.array([14, 17, 20, 23]), np.arange(26, 30)
    rew.foot_clearance(sd, z_cols, vel_cols, 0.02, 0.08, out)
    speed = np.hypot(sd[:, vel_cols], sd[:, vel_cols + 1])
    np.testing.assert_allclose(out, (((sd[:, z_cols] - 0.02 - 0.08) ** 2) * speed).sum(1))
    rew.foot_slip(sd, vel_cols, touch_cols, 0.1, out)
    np.testing.assert_allclose(out, ((sd[:, touch_cols] > 0.1) * speed**2).sum(1))


def test_weighted_sum(rng: np.random.Generator) -> None:
    raw, weights, out = (
        rng.standard_normal((3, N)),
        np.array([0.02, -0.5, 1.5]),
        np.zeros(N, dtype=np.float32),
    )
    rew.weighted_sum(raw.T, weights, out)
    np.testing.assert_allclose(out, (raw.T * weights).sum(1), rtol=1e-6)


def test_terminations(rng: np.random.Generator) -> None:
    out = np.zeros(N, dtype=np.bool_)
    term.time_out(np.arange(N), 5, out)
    np.testing.assert_array_equal(out, np.arange(N) >= 5)
    sd = _sensor_block(rng)
    term.tilt_exceeds(sd, 10, np.cos(np.radians(70)), out)
    tilt = np.degrees(np.arccos(np.clip([-_gravity(q)[2] for q in sd[:, 10:14]], -1, 1)))
    np.testing.assert_array_equal(out, tilt > 70)
    flags = np.array([[1, 0], [0, 1], [1, 1], [0, 0]], dtype=np.bool_)  # columns: fell, time_out
    terminated, truncated = np.zeros(4, dtype=np.bool_), np.zeros(4, dtype=np.bool_)
    term.combine(flags, np.array([False, True]), terminated, truncated)
    np.testing.assert_array_equal(terminated, [True, False, True, False])
    np.testing.assert_array_equal(truncated, [False, True, False, False])


def test_quat_from_euler_matches_rotation_product() -> None:
    roll, pitch, yaw = 0.3, -0.7, 2.1
    q = np.array(reset.quat_from_euler(roll, pitch, yaw))
    c, s = np.cos, np.sin
    rz = np.array([[c(yaw), -s(yaw), 0], [s(yaw), c(yaw), 0], [0, 0, 1]])
    ry = np.array([[c(pitch), 0, s(pitch)], [0, 1, 0], [-s(pitch), 0, c(pitch)]])
    rx = np.array([[1, 0, 0], [0, c(roll), -s(roll)], [0, s(roll), c(roll)]])
    np.testing.assert_allclose(rotation_matrix(q), rz @ ry @ rx, atol=1e-12)


def test_sample_root_state(rng: np.random.Generator) -> None:
    k = 5
    qpos, qvel = np.tile([0.0, 0.0, 0.3, 1, 0, 0, 0, 0.5], (k, 1)), np.zeros((k, 7))
    u = rng.random((k, 12))
    pose_lo, pose_hi = np.array([-1, -2, 0, 0, 0, -np.pi]), np.array([1, 2, 0, 0, 0, np.pi])
    vel_lo, vel_hi = -np.arange(6.0), np.arange(6.0)
    reset.sample_root_state(u, pose_lo, pose_hi, vel_lo, vel_hi, qpos, qvel)
    np.testing.assert_allclose(qpos[:, :3], [0, 0, 0.3] + pose_lo[:3] + (pose_hi - pose_lo)[:3] * u[:, :3])
    yaw = -np.pi + 2 * np.pi * u[:, 5]
    yaw_quat = np.stack([np.cos(yaw / 2), 0 * yaw, 0 * yaw, np.sin(yaw / 2)], 1)
    np.testing.assert_allclose(qpos[:, 3:7], yaw_quat, atol=1e-12)
    np.testing.assert_allclose(qvel[:, :6], vel_lo + (vel_hi - vel_lo) * u[:, 6:])
    np.testing.assert_array_equal(qpos[:, 7], 0.5)


def test_sample_joint_offsets(rng: np.random.Generator) -> None:
    k, qpos = 6, np.tile(np.linspace(0, 1, 10), (6, 1))
    u = rng.random((k, 3))
    adr, lo, hi = np.array([7, 8, 9]), np.array([0.0, 0.0, 0.95]), np.array([1.0, 0.85, 2.0])
    expected = qpos.copy()
    expected[:, adr] = np.clip(qpos[:, adr] - 0.2 + 0.4 * u, lo, hi)
    reset.sample_joint_offsets(u, adr, -0.2, 0.2, lo, hi, qpos)
    np.testing.assert_allclose(qpos, expected)


def test_velocity_command_resample_and_update(rng: np.random.Generator) -> None:
    n, rows = 8, np.array([1, 4, 6])
    command, heading, time_left = np.zeros((n, 3)), np.zeros(n), np.full(n, 9.0)
    is_heading, is_standing = np.zeros(n, dtype=np.bool_), np.zeros(n, dtype=np.bool_)
    ranges = np.array([[-1, 1], [-0.5, 0.5], [-1, 1], [-np.pi, np.pi], [5, 10]], dtype=float)
    u = rng.random((3, cmd.RESAMPLE_DRAWS))
    u[:, 5], u[:, 6] = [0.1, 0.9, 0.2], [0.9, 0.9, 0.05]
    cmd.resample_velocity_command(
        u, rows, ranges, 0.3, 0.1, command, heading, is_heading, is_standing, time_left
    )
    np.testing.assert_allclose(time_left[rows], 5 + 5 * u[:, 0])
    np.testing.assert_allclose(command[rows], ranges[:3, 0] + (ranges[:3, 1] - ranges[:3, 0]) * u[:, 1:4])
    np.testing.assert_allclose(heading[rows], -np.pi + 2 * np.pi * u[:, 4])
    np.testing.assert_array_equal(is_heading[rows], [True, False, True])
    np.testing.assert_array_equal(is_standing[rows], [False, False, True])
    assert time_left[0] == 9.0 and not command[0].any()

    sd = np.zeros((n, 4))
    sd[:, :4] = unit_quats(rng, n)
    expected = command.copy()
    for r in range(n):
        if is_heading[r]:
            rot = rotation_matrix(sd[r])
            err = np.angle(np.exp(1j * (heading[r] - np.arctan2(rot[1, 0], rot[0, 0]))))
            expected[r, 2] = np.clip(0.5 * err, -1, 1)
        if is_standing[r]:
            expected[r] = 0.0
    cmd.update_velocity_command(sd, 0, 0.5, -1.0, 1.0, command, heading, is_heading, is_standing)
    np.testing.assert_allclose(command, expected, atol=1e-12)


def test_joint_position_targets(rng: np.random.Generator) -> None:
    action = (3 * rng.standard_normal((N, 4))).astype(np.float32)
    offset, lo, hi = rng.standard_normal(4), -np.ones(4), np.ones(4)
    ctrl = np.zeros((N, 4))
    joint_position_targets(action, 2.0, 0.25, offset, lo, hi, ctrl)
    np.testing.assert_allclose(ctrl, np.clip(np.clip(action.astype(float), -2, 2) * 0.25 + offset, lo, hi))
