"""Manager-vs-direct parity: both variants step one action sequence and every output must match exactly."""

from __future__ import annotations

import numpy as np

from envruntime.envs.vecenv import StepResult, VecEnv


def step_both_and_compare(envs: list[VecEnv], amplitude: float | np.ndarray, steps: int, *, seed: int = 11,
                          action_seed: int = 3) -> tuple[int, int, StepResult]:
    """Reset ``envs`` (manager, direct) with ``seed``, step both ``steps`` times with the same seeded
    Gaussian actions (``amplitude``: a scalar or one row per env), and assert equal first observations,
    rewards, terminated/truncated flags, done rows, observations and final observations (``obs`` itself
    on steps where no row ended, the done rows alone otherwise), then equal physics state. Returns
    (terminated, truncated, last result) so a test can check that both kinds of reset happened."""
    manager, direct = envs
    first = [e.reset(seed=seed) for e in envs]
    for group in first[0]:
        np.testing.assert_array_equal(first[0][group], first[1][group], err_msg=f"first obs {group}")
    rng = np.random.default_rng(action_seed)
    terminated = truncated = 0
    for step in range(steps):
        action = (amplitude * rng.standard_normal((manager.num_envs, manager.action_dim))).astype(np.float32)
        m, d = (e.step(action) for e in envs)
        for name in ("reward", "terminated", "truncated"):
            np.testing.assert_array_equal(getattr(m, name), getattr(d, name), err_msg=f"{name} {step}")
        np.testing.assert_array_equal(m.done_rows, d.done_rows, err_msg=f"done rows {step}")
        np.testing.assert_array_equal(m.done_rows, np.flatnonzero(m.terminated | m.truncated))
        for group in m.obs:
            np.testing.assert_array_equal(m.obs[group], d.obs[group], err_msg=f"obs {group} at step {step}")
            np.testing.assert_array_equal(m.final_obs[group], d.final_obs[group], err_msg=f"final {step}")
        for r in (m, d):  # final_obs aliases obs when no row ended, else holds the done rows alone
            if len(r.done_rows) == 0:
                assert r.final_obs is r.obs
            else:
                assert all(r.final_obs[g].shape == (len(r.done_rows), o.shape[1]) for g, o in r.obs.items())
        terminated += int(m.terminated.sum())
        truncated += int(m.truncated.sum())
    np.testing.assert_array_equal(manager.backend.qpos, direct.backend.qpos)
    return terminated, truncated, m


def check_final_obs_is_pre_reset(env: VecEnv, joints: slice, steps: int = 5, substeps: int = 4) -> None:
    """``env`` is a manager env whose every row times out at step ``steps`` under zero actions. Before
    that step final_obs is obs (no row ended); at it, final_obs holds the terminal joint
    positions (critic columns ``joints``, found by replaying the same seed and doing the last step's
    ``substeps`` physics steps by hand) and obs the reset state."""
    zero = np.zeros((env.num_envs, env.action_dim), dtype=np.float32)
    env.reset(seed=0)
    for _ in range(steps - 1):
        result = env.step(zero)
        assert result.final_obs is result.obs and len(result.done_rows) == 0
    env.backend.step(env.action_manager.ctrl, substeps)  # the physics the last step will do
    terminal_joint_pos = env.backend.qpos[:, 7:] - env.default_qpos[7:]
    env.reset(seed=0)  # replay: the same seed gives the same first steps
    for _ in range(steps - 1):
        env.step(zero)
    result = env.step(zero)  # every env times out and is reset inside this step
    assert result.truncated.all() and not result.terminated.any()
    np.testing.assert_allclose(result.final_obs["critic"][:, joints], terminal_joint_pos, atol=1e-6)
    assert not np.allclose(result.obs["critic"][:, joints], terminal_joint_pos, atol=1e-3)
