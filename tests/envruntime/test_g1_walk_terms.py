"""The humanoid kernels and term funcs g1_walk_flat adds, against NumPy oracles written here."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from envruntime.kernels import humanoid as k
from envruntime.robots import g1
from envruntime.tasks.common.humanoid import joint_stds, lumped_masses

N = 7


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(5)


def test_posture_per_joint(rng: np.random.Generator) -> None:
    qpos = rng.standard_normal((N, 6))
    adr = np.array([1, 3, 4], dtype=np.int64)
    default = rng.standard_normal(3)
    std = np.array([0.1, 0.5, 2.0])
    out = np.zeros(N)
    k.posture_per_joint(qpos, adr, default, 1.0 / std, out)
    expected = np.exp(-np.mean(((qpos[:, adr] - default) / std) ** 2, axis=1))
    np.testing.assert_allclose(out, expected, rtol=1e-12)


def test_squared_sum_and_count_above(rng: np.random.Generator) -> None:
    sd = rng.standard_normal((N, 5)).astype(np.float32)
    cols = np.array([0, 2, 4], dtype=np.int64)
    out = np.zeros(N)
    k.squared_sum(sd, cols, out)
    np.testing.assert_allclose(out, np.sum(sd[:, cols].astype(np.float64) ** 2, axis=1), rtol=1e-12)
    k.count_above(sd, cols, 0.3, out)
    np.testing.assert_array_equal(out, np.sum(sd[:, cols] > 0.3, axis=1))


def test_angular_momentum_proxy(rng: np.random.Generator) -> None:
    """|L|^2 about the centre of mass, and zero for a rigid translation."""
    nb = 4
    mass = rng.uniform(0.5, 3.0, nb)
    pos = rng.standard_normal((N, nb, 3))
    vel = rng.standard_normal((N, nb, 3))
    sd = np.concatenate([pos.reshape(N, -1), vel.reshape(N, -1)], axis=1)
    pos_cols = np.arange(nb, dtype=np.int64) * 3
    vel_cols = pos_cols + 3 * nb
    out = np.zeros(N)
    k.angular_momentum_proxy(sd, pos_cols, vel_cols, mass, out)
    com = np.einsum("b,nbi->ni", mass, pos) / mass.sum()
    vcom = np.einsum("b,nbi->ni", mass, vel) / mass.sum()
    momentum = np.einsum("b,nbi->ni", mass, np.cross(pos - com[:, None], vel - vcom[:, None]))
    np.testing.assert_allclose(out, np.sum(momentum**2, axis=1), rtol=1e-9)
    same_velocity = np.tile(rng.standard_normal(3), (N, nb))
    translating = np.concatenate([pos.reshape(N, -1), same_velocity], axis=1)
    k.angular_momentum_proxy(translating, pos_cols, vel_cols, mass, out)
    np.testing.assert_allclose(out, 0.0, atol=1e-20)


def test_air_time_counts_once_per_step_and_zeroes_on_reset() -> None:
    touch = np.array([[5.0, 0.0], [0.0, 0.0]])
    cols = np.array([0, 1], dtype=np.int64)
    episode_length = np.array([0, 0], dtype=np.int64)
    stamp = np.full(2, -1, dtype=np.int64)
    air = np.full((2, 2), 9.0)
    out = np.zeros((2, 2))
    rows = np.array([0, 1], dtype=np.int64)
    k.air_time_rows(touch, rows, cols, 1.0, 0.02, episode_length, stamp, air, out)
    np.testing.assert_array_equal(out, 0.0)  # step 0: a fresh episode
    for step in (1, 2, 3):
        episode_length[:] = step
        for _ in range(2):  # a second call within the same step must not count again
            k.air_time_rows(touch, rows, cols, 1.0, 0.02, episode_length, stamp, air, out)
        np.testing.assert_allclose(out, [[0.0, 0.02 * step], [0.02 * step, 0.02 * step]])
    episode_length[1] = 0  # row 1 reset
    k.air_time_rows(touch, rows[1:], cols, 1.0, 0.02, episode_length, stamp, air, out[:1])
    np.testing.assert_array_equal(out[0], 0.0)
    np.testing.assert_allclose(air[0], [0.0, 0.06])


def test_force_feature() -> None:
    sd = np.array([[0.0, 3.0, -1.0]], dtype=np.float32)
    out = np.zeros((1, 3))
    k.force_feature_rows(sd, np.array([0]), np.array([0, 1, 2]), out)
    np.testing.assert_allclose(out, [[0.0, np.log1p(3.0), 0.0]])


def test_joint_stds_first_match_and_errors() -> None:
    stds = joint_stds(["left_knee_joint", "waist_yaw_joint"], {r".*knee.*": 0.35, r".*": 0.2})
    np.testing.assert_array_equal(stds, [0.35, 0.2])
    with pytest.raises(ValueError, match="no std pattern matches joint 'waist_yaw_joint'"):
        joint_stds(["waist_yaw_joint"], {r".*knee.*": 0.35})
    with pytest.raises(ValueError, match="must be positive"):
        joint_stds(["left_knee_joint"], {r".*": 0.0})


def test_lumped_masses_hold_the_whole_robot() -> None:
    model = mujoco.MjModel.from_xml_path(str(g1.G1_XML))
    mass = lumped_masses(g1.G1_XML, g1.TRACKED_BODIES)
    assert mass.sum() == pytest.approx(model.body_mass.sum())
    assert np.all(mass > 0)
    pelvis_only = lumped_masses(g1.G1_XML, ["pelvis"])
    assert pelvis_only[0] == pytest.approx(model.body_mass.sum())
    with pytest.raises(KeyError, match="no body 'tail'"):
        lumped_masses(g1.G1_XML, ["tail"])
