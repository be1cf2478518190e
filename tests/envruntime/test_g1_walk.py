"""g1_walk_flat: registry, dims, observation layout, standing, final_obs, and manager/direct parity
on the MuJoCo (float64) and MotrixSim (float32) backends."""

from __future__ import annotations

import numpy as np
import pytest
from parity import check_final_obs_is_pre_reset, step_both_and_compare

from envruntime.backends.mujoco_backend import MujocoBackend
from envruntime.envs.vecenv import ENV_PHASES, VecEnv
from envruntime.tasks import make_env
from envruntime.tasks.g1_walk_flat import XML_PATH, G1WalkCfg, make_direct_env, make_manager_env
from envruntime.tasks.g1_walk_flat.params import FEET

N = 16
NU = 29
FACTORIES = {"manager": make_manager_env, "direct": make_direct_env}
CALM = G1WalkCfg(reset_root_vel=0.0, push_vel=0.0, reset_joint_offset=0.0)


def _env(variant: str, cfg: G1WalkCfg, n: int = N):
    return FACTORIES[variant](MujocoBackend(XML_PATH, num_envs=n, threads=1), cfg)


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["manager", "direct"])
def test_make_env_builds_a_vecenv(variant: str) -> None:
    env = make_env("g1_walk_flat", "mujoco", variant, num_envs=4, threads=1)
    assert isinstance(env, VecEnv) and env.variant == variant and env.task == "g1_walk_flat"
    assert env.action_dim == NU and env.obs_dims == {"actor": 99, "critic": 107}
    obs = env.reset(seed=0)
    assert obs["actor"].shape == (4, 99) and obs["critic"].dtype == np.float32
    result = env.step(np.zeros((4, NU), dtype=np.float32))
    assert result.reward.shape == (4,) and result.reward.dtype == np.float32
    assert set(ENV_PHASES) <= set(env.timings) and all(v >= 0.0 for v in env.timings.values())
    assert env.manager_names == (
        () if variant == "direct" else ("action", "observation", "reward", "termination", "event", "command")
    )
    with pytest.raises(ValueError, match="action must have shape"):
        env.step(np.zeros((4, 12), dtype=np.float32))
    env.close()


@pytest.mark.parametrize("variant", ["manager", "direct"])
def test_the_robot_stands_and_the_critic_reads_the_state(variant: str) -> None:
    """Zero actions from the home pose: nobody falls, the pelvis stays near its home height, and
    the critic's columns hold what the backend says (joint offsets, sole heights, contacts)."""
    env = _env(variant, CALM, n=4)
    env.reset(seed=0)
    for _ in range(40):
        result = env.step(np.zeros((4, NU), dtype=np.float32))
        assert not result.terminated.any()
    b = env.backend
    assert np.all((b.qpos[:, 2] > 0.7) & (b.qpos[:, 2] < 0.85))
    critic = result.obs["critic"]
    np.testing.assert_allclose(critic[:, 9:38], b.qpos[:, 7:] - env.default_qpos[7:], atol=1e-6)
    sole_z = np.stack([b.sensor(s)[:, 2] for s in FEET.pos], axis=1)
    np.testing.assert_allclose(critic[:, 99:101], sole_z, atol=1e-6)
    touch = np.concatenate([b.sensor(s) for s in FEET.touch], axis=1)
    assert np.all(touch > 1.0), "both soles carry the standing robot"
    np.testing.assert_array_equal(critic[:, 101:103], 0.0)  # air time
    np.testing.assert_array_equal(critic[:, 103:105], 1.0)  # contact
    np.testing.assert_allclose(critic[:, 105:107], np.log1p(touch), rtol=1e-6)
    env.close()


def test_final_obs_is_the_pre_reset_observation() -> None:
    """Every env times out at step 5: final_obs holds the terminal state (replayed from the same
    seed), obs the reset state; before that final_obs == obs."""
    env = _env("manager", G1WalkCfg(episode_length_s=0.1), n=4)
    check_final_obs_is_pre_reset(env, slice(9, 9 + NU))
    env.close()


def test_manager_and_direct_agree_bit_for_bit() -> None:
    """300 steps from one seed and one action sequence: half the envs act wildly and fall, the
    others act gently and time out (1 s episodes), with frequent pushes. Both variants evaluate
    the same row formulas (envruntime.kernels) in the same order with the same random numbers
    and sum the rewards in the same order, so equality is exact, not approximate."""
    cfg = G1WalkCfg(episode_length_s=1.0, push_interval_s=(0.2, 0.6), push_vel=1.0)
    envs = [_env(v, cfg) for v in ("manager", "direct")]
    amplitude = np.where(np.arange(N) < N // 2, 2.0, 0.2)[:, None]
    terminated, truncated, _ = step_both_and_compare(envs, amplitude, 300)
    print(f"parity: {terminated} terminated, {truncated} truncated")
    assert terminated >= 10 and truncated >= 10
    rewards = envs[0].reward_manager.raw  # the last step's raw terms, one row per term
    names = envs[0].reward_manager.term_names
    for term in ("angular_momentum", "body_ang_vel", "foot_clearance"):
        assert rewards[names.index(term)].max() > 0.0, f"{term} never active"
    for e in envs:
        e.close()


@pytest.mark.slow
def test_variants_agree_on_the_float32_motrix_backend() -> None:
    """MotrixSim keeps float32 state: both variants build on it, step, and still agree exactly."""
    envs = [make_env("g1_walk_flat", "motrix", v, num_envs=4, threads=1) for v in ("manager", "direct")]
    assert envs[0].backend.dtype == np.float32
    *_, m = step_both_and_compare(envs, 0.5, 10, seed=2, action_seed=0)
    assert np.isfinite(m.obs["critic"]).all() and np.all(envs[0].backend.qpos[:, 2] > 0.5)
    for e in envs:
        e.close()


def test_a_posture_std_missing_a_joint_names_the_term() -> None:
    cfg = G1WalkCfg(posture_std={r".*knee.*": 0.35})
    with pytest.raises(ValueError, match="reward term 'posture': no std pattern matches joint"):
        _env("manager", cfg, n=2)
    with pytest.raises(ValueError, match="no std pattern matches joint"):
        _env("direct", cfg, n=2)
