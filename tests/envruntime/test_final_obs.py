"""The VecEnv final_obs contract in both variants: ``obs`` itself on steps where no row ended, the
done rows alone (their pre-reset observation, in ``done_rows`` order) on steps where some did."""

from __future__ import annotations

import numpy as np
import pytest

from envruntime.backends.mujoco_backend import MujocoBackend
from envruntime.envs.vecenv import dense_final_obs
from envruntime.tasks.go2_joystick_flat import XML_PATH, Go2JoystickCfg, make_direct_env, make_manager_env

N = 8
FACTORIES = {"manager": make_manager_env, "direct": make_direct_env}


@pytest.mark.parametrize("variant", ["manager", "direct"])
def test_final_obs_aliases_obs_or_holds_the_done_rows(variant: str) -> None:
    env = FACTORIES[variant](MujocoBackend(XML_PATH, num_envs=N, threads=1),
                             Go2JoystickCfg(episode_length_s=0.1, push_vel=0.0))  # 5-step episodes
    try:
        env.reset(seed=1)
        env.episode_length[: N // 2] = 2  # the first half ends at step 3, the rest at step 5
        zero = np.zeros((N, env.action_dim), dtype=np.float32)
        results = [env.step(zero) for _ in range(2)]
        for result in results:
            assert result.final_obs is result.obs and result.done_rows.shape == (0,)
        result = env.step(zero)  # step 3: rows 0..3 time out
        np.testing.assert_array_equal(result.done_rows, np.arange(N // 2))
        assert result.truncated[: N // 2].all() and not result.truncated[N // 2:].any()
        assert result.final_obs is not result.obs
        for group, obs in result.obs.items():
            final = result.final_obs[group]
            assert final.shape == (N // 2, obs.shape[1]) and final.dtype == np.float32
            assert not np.array_equal(final, obs[: N // 2])  # terminal, not the reset observation
        kept_obs = {g: o[N // 2:].copy() for g, o in result.obs.items()}
        terminal = {g: f.copy() for g, f in result.final_obs.items()}
        dense = dense_final_obs(result)
        for group in result.obs:
            np.testing.assert_array_equal(dense[group][: N // 2], terminal[group])
            np.testing.assert_array_equal(dense[group][N // 2:], kept_obs[group])
        after = env.step(zero)  # step 4: no row ends, final_obs is obs again
        assert after.final_obs is after.obs and after.done_rows.shape == (0,)
    finally:
        env.close()


def test_terminal_rows_match_a_replay_without_reset() -> None:
    """The done rows' final_obs is the observation their terminal state gives: replay the same seed
    with episodes long enough that no row resets, and compare the critic (noise-free) rows."""
    short, long = (make_manager_env(MujocoBackend(XML_PATH, num_envs=N, threads=1),
                                    Go2JoystickCfg(episode_length_s=s, push_vel=0.0)) for s in (0.1, 1.0))
    try:
        zero = np.zeros((N, short.action_dim), dtype=np.float32)
        for env in (short, long):
            env.reset(seed=3)
        for _ in range(4):
            short.step(zero), long.step(zero)
        ended, running = short.step(zero), long.step(zero)
        assert len(ended.done_rows) == N and len(running.done_rows) == 0
        np.testing.assert_array_equal(ended.final_obs["critic"], running.obs["critic"])
    finally:
        short.close()
        long.close()
