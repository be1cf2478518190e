"""Manager-vs-direct parity: both variants step one action sequence and every output must match exactly."""

from __future__ import annotations

import numpy as np

from envruntime.vecenv import StepResult, VecEnv


def step_both_and_compare(envs: list[VecEnv], amplitude: float | np.ndarray, steps: int, *, seed: int = 11,
                          action_seed: int = 3) -> tuple[int, int, StepResult]:
    """Reset ``envs`` (manager, direct) with ``seed``, step both ``steps`` times with the same seeded
    Gaussian actions (``amplitude``: a scalar or one row per env), and assert equal first observations,
    rewards, terminated/truncated flags, observations and final observations (equal to the observations
    on rows that did not end), then equal physics state. Returns (terminated, truncated, last result)
    so a test can check that both kinds of reset happened."""
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
        kept = ~(m.terminated | m.truncated)
        for group in m.obs:
            np.testing.assert_array_equal(m.obs[group], d.obs[group], err_msg=f"obs {group} at step {step}")
            np.testing.assert_array_equal(m.final_obs[group], d.final_obs[group], err_msg=f"final {step}")
            np.testing.assert_array_equal(m.final_obs[group][kept], m.obs[group][kept])
        terminated += int(m.terminated.sum())
        truncated += int(m.truncated.sum())
    np.testing.assert_array_equal(manager.backend.qpos, direct.backend.qpos)
    return terminated, truncated, m
