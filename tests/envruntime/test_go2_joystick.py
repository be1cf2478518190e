"""go2_joystick_flat: registry, dims, determinism, final_obs, and manager/direct parity."""

from __future__ import annotations

import numpy as np
import pytest
from parity import check_final_obs_is_pre_reset, step_both_and_compare

from envruntime.backends.mujoco_backend import MujocoBackend
from envruntime.envs.vecenv import ENV_PHASES, VecEnv
from envruntime.tasks import make_env
from envruntime.tasks.go2_joystick_flat import XML_PATH, Go2JoystickCfg, make_direct_env, make_manager_env

N = 16
FACTORIES = {"manager": make_manager_env, "direct": make_direct_env}


def _pair(cfg: Go2JoystickCfg, n: int = N) -> list:
    return [
        FACTORIES[v](MujocoBackend(XML_PATH, num_envs=n, threads=1), cfg) for v in ("manager", "direct")
    ]


@pytest.mark.parametrize("variant", ["manager", "direct"])
def test_make_env_builds_a_vecenv(variant: str) -> None:
    env = make_env("go2_joystick_flat", "mujoco", variant, num_envs=4, threads=1)
    assert isinstance(env, VecEnv) and env.variant == variant
    assert env.action_dim == 12 and env.obs_dims == {"actor": 48, "critic": 56}
    obs = env.reset(seed=0)
    assert obs["actor"].shape == (4, 48) and obs["actor"].dtype == np.float32
    result = env.step(np.zeros((4, 12), dtype=np.float32))
    assert result.reward.shape == (4,) and result.reward.dtype == np.float32
    assert set(ENV_PHASES) <= set(env.timings) and all(v >= 0.0 for v in env.timings.values())
    assert env.manager_names == (
        () if variant == "direct" else ("action", "observation", "reward", "termination", "event", "command")
    )
    with pytest.raises(ValueError, match="action must have shape"):
        env.step(np.zeros((4, 3), dtype=np.float32))
    env.close()


def test_the_robot_stands_with_zero_actions() -> None:
    env = make_direct_env(MujocoBackend(XML_PATH, num_envs=N, threads=1),
                          Go2JoystickCfg(reset_root_vel=0.0, push_vel=0.0))  # fmt: skip
    env.reset(seed=0)
    for _ in range(50):
        result = env.step(np.zeros((N, 12), dtype=np.float32))
        assert not result.terminated.any()
    base_height = env.backend.qpos[:, 2]
    assert np.all((base_height > 0.18) & (base_height < 0.32))
    env.close()


def test_same_seed_same_episode_other_seed_differs() -> None:
    cfg = Go2JoystickCfg()
    a, b = (make_manager_env(MujocoBackend(XML_PATH, num_envs=4, threads=1), cfg) for _ in range(2))
    np.testing.assert_array_equal(a.reset(seed=5)["actor"], b.reset(seed=5)["actor"])
    action = np.full((4, 12), 0.2, dtype=np.float32)
    np.testing.assert_array_equal(a.step(action).obs["actor"], b.step(action).obs["actor"])
    assert not np.array_equal(a.reset(seed=5)["critic"], b.reset(seed=6)["critic"])


def test_final_obs_is_the_pre_reset_observation() -> None:
    """With the critic (noise-free) group: a done row's final_obs holds its terminal state, its
    obs the reset state; other rows have final_obs == obs."""
    env = make_manager_env(
        MujocoBackend(XML_PATH, num_envs=4, threads=1), Go2JoystickCfg(episode_length_s=0.1)
    )
    check_final_obs_is_pre_reset(env, slice(9, 21))  # 0.1 s: every env times out at step 5
    env.close()


def test_manager_and_direct_agree_bit_for_bit() -> None:
    """300 steps from one seed and one action sequence: half the envs act wildly and fall (tilt
    limit 30 deg), the others act gently and time out (1 s episodes), so both kinds of reset run.
    Both variants evaluate the same row formulas (envruntime.kernels) in the same order with
    the same random numbers, so equality is exact, not approximate."""
    cfg = Go2JoystickCfg(episode_length_s=1.0, max_tilt_deg=30.0, push_interval_s=(0.2, 0.6), push_vel=1.0)
    amplitude = np.where(np.arange(N) < N // 2, 3.0, 0.2)[:, None]
    terminated, truncated, _ = step_both_and_compare(_pair(cfg), amplitude, 300)
    print(f"parity: {terminated} terminated, {truncated} truncated")
    assert terminated >= 10 and truncated >= 10


@pytest.mark.slow
def test_variants_agree_on_a_float32_backend() -> None:
    """MotrixSim keeps float32 state: both variants accept it and still agree exactly."""
    envs = [make_env("go2_joystick_flat", "motrix", v, num_envs=4, threads=1) for v in ("manager", "direct")]
    assert envs[0].backend.dtype == np.float32
    *_, m = step_both_and_compare(envs, 0.5, 30, seed=2, action_seed=0)
    assert np.isfinite(m.obs["actor"]).all() and np.all(envs[0].backend.qpos[:, 2] > 0.1)
