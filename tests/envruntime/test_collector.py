"""Collector on the real go2 env (tiny N): phases, replay contents, terminal next_obs."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from envruntime.collect.collector import BASE_PHASES, Collector, make_collector
from envruntime.envs.vecenv import StepResult, VecEnv
from envruntime.tasks import make_env

NUM_ENVS, STEPS, CAPACITY = 6, 5, 3


class RecordingEnv:
    """Delegates to a real env and keeps a copy of every StepResult the collector saw."""

    def __init__(self, env: VecEnv) -> None:
        self._env = env
        self.results: list[StepResult] = []
        self.first_obs: dict[str, np.ndarray] = {}

    def __getattr__(self, name: str) -> object:
        return getattr(self._env, name)

    def reset(self, seed: int) -> dict[str, np.ndarray]:
        obs = self._env.reset(seed)
        self.first_obs = {g: a.copy() for g, a in obs.items()}
        return obs

    def step(self, action: np.ndarray) -> StepResult:
        r = self._env.step(action)
        self.results.append(StepResult(
            obs={g: a.copy() for g, a in r.obs.items()}, reward=r.reward.copy(),
            terminated=r.terminated.copy(), truncated=r.truncated.copy(),
            final_obs={g: a.copy() for g, a in r.final_obs.items()}))
        return r


@pytest.fixture(params=["sac", "flashsac"])
def recorded(request: pytest.FixtureRequest) -> Iterator[tuple[Collector, RecordingEnv]]:
    env = RecordingEnv(make_env("go2_joystick_flat", "mujoco", "manager", NUM_ENVS, 1))
    collector = make_collector(env, request.param, CAPACITY)
    yield collector, env
    env.close()


def test_replay_holds_each_transition_with_its_true_next_obs(
        recorded: tuple[Collector, RecordingEnv]) -> None:
    collector, env = recorded
    collector.reset(seed=0)
    steps = [collector.step() for _ in range(STEPS)]
    replay = collector.replay
    assert replay.capacity == CAPACITY * NUM_ENVS and replay.size == replay.capacity

    for index in range(STEPS - CAPACITY, STEPS):  # the blocks still in the ring
        rows = slice((index % CAPACITY) * NUM_ENVS, (index % CAPACITY + 1) * NUM_ENVS)
        result = env.results[index]
        seen = env.first_obs if index == 0 else env.results[index - 1].obs
        for group in env.obs_dims:
            np.testing.assert_array_equal(replay.obs[group][rows], seen[group])
            np.testing.assert_array_equal(replay.next_obs[group][rows], result.final_obs[group])
        np.testing.assert_array_equal(replay.reward[rows], result.reward)
        np.testing.assert_array_equal(replay.terminated[rows], result.terminated)
        np.testing.assert_array_equal(replay.truncated[rows], result.truncated)
        assert np.all(np.abs(replay.action[rows]) <= 1.0)
        assert steps[index].resets == int(np.count_nonzero(result.terminated | result.truncated))

    for step in steps:
        assert set(BASE_PHASES) <= step.phases.keys()
        assert step.phases["collector_step_ms"] >= step.phases["policy_ms"] + step.phases["env_step_ms"]
        assert step.phases["env_step_ms"] >= step.phases["physics_ms"] > 0.0


def test_step_before_reset_is_an_error() -> None:
    env = make_env("go2_joystick_flat", "mujoco", "direct", 2, 1)
    try:
        with pytest.raises(RuntimeError, match="before Collector.reset"):
            make_collector(env, "sac", 2).step()
    finally:
        env.close()
