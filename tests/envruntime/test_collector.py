"""Collector on the real go2 env (tiny N, rows ending mid-run): phases, replay contents, the true
terminal next_obs of done rows, pregenerated actions."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from envruntime.backends.mujoco_backend import MujocoBackend
from envruntime.collect.collector import BASE_PHASES, Collector, make_collector
from envruntime.collect.policy import ACTION_BANK_STEPS, PregeneratedPolicy
from envruntime.envs.vecenv import StepResult, VecEnv, dense_final_obs
from envruntime.tasks import make_env
from envruntime.tasks.go2_joystick_flat import XML_PATH, Go2JoystickCfg, make_manager_env

NUM_ENVS, STEPS, CAPACITY = 6, 7, 4
EPISODE_STEPS = 5  # 0.1 s episodes at the go2 control step of 0.02 s


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
        self._env.episode_length[::2] = 2  # even rows end 2 steps early: steps with some rows done
        self.first_obs = {g: a.copy() for g, a in obs.items()}
        return obs

    def step(self, action: np.ndarray) -> StepResult:
        r = self._env.step(action)
        self.results.append(StepResult(
            obs={g: a.copy() for g, a in r.obs.items()}, reward=r.reward.copy(),
            terminated=r.terminated.copy(), truncated=r.truncated.copy(),
            final_obs={g: a.copy() for g, a in r.final_obs.items()}, done_rows=r.done_rows.copy()))
        return r


def recording_env() -> RecordingEnv:
    backend = MujocoBackend(XML_PATH, num_envs=NUM_ENVS, threads=1)
    return RecordingEnv(make_manager_env(backend, Go2JoystickCfg(episode_length_s=0.1)))


@pytest.fixture(params=[("sac", "actor"), ("flashsac", "actor"), ("sac", "pregenerated")])
def recorded(request: pytest.FixtureRequest) -> Iterator[tuple[Collector, RecordingEnv]]:
    algo, actions = request.param
    env = recording_env()
    collector = make_collector(env, algo, CAPACITY, actions=actions)
    yield collector, env
    env.close()


def test_replay_holds_each_transition_with_its_true_next_obs(
        recorded: tuple[Collector, RecordingEnv]) -> None:
    collector, env = recorded
    collector.reset(seed=0)
    steps = [collector.step() for _ in range(STEPS)]
    replay = collector.replay
    assert replay.capacity == CAPACITY * NUM_ENVS and replay.size == replay.capacity - NUM_ENVS
    done_counts = [len(r.done_rows) for r in env.results]
    assert 0 < done_counts[2] < NUM_ENVS and 0 < done_counts[4] < NUM_ENVS  # even rows, then odd rows
    assert done_counts[0] == done_counts[1] == 0

    for index in range(STEPS - CAPACITY + 1, STEPS):  # the complete blocks still in the ring
        rows = slice((index % CAPACITY) * NUM_ENVS, (index % CAPACITY + 1) * NUM_ENVS)
        result = env.results[index]
        seen = env.first_obs if index == 0 else env.results[index - 1].obs
        for group in env.obs_dims:
            np.testing.assert_array_equal(replay.obs[group][rows], seen[group])
            expected = dense_final_obs(result)[group]  # obs with the done rows' terminal observation
            np.testing.assert_array_equal(replay.next_obs[group][rows], expected)
            if len(result.done_rows):  # the terminal observation is not the post-reset one
                assert not np.array_equal(expected[result.done_rows], result.obs[group][result.done_rows])
        np.testing.assert_array_equal(replay.reward[rows], result.reward)
        np.testing.assert_array_equal(replay.terminated[rows], result.terminated)
        np.testing.assert_array_equal(replay.truncated[rows], result.truncated)
        assert np.all(np.abs(replay.action[rows]) <= 1.0)
        assert steps[index].resets == len(result.done_rows)

    last = slice((STEPS % CAPACITY) * NUM_ENVS, (STEPS % CAPACITY + 1) * NUM_ENVS)
    for group in env.obs_dims:  # the pending slot already holds the observation the next step acts on
        np.testing.assert_array_equal(replay.obs[group][last], env.results[-1].obs[group])
    for step in steps:
        assert set(BASE_PHASES) <= step.phases.keys()
        assert step.phases["collector_step_ms"] >= step.phases["policy_ms"] + step.phases["env_step_ms"]
        assert step.phases["env_step_ms"] >= step.phases["physics_ms"] > 0.0


def test_pregenerated_actions_cycle_a_fixed_bank_without_policy_time() -> None:
    env = recording_env()
    try:
        collector = make_collector(env, "sac", ACTION_BANK_STEPS + 2, actions="pregenerated", seed=4)
        policy = collector.policy
        assert isinstance(policy, PregeneratedPolicy) and not policy.runs_forward
        bank = policy.bank.copy()
        assert bank.shape == (ACTION_BANK_STEPS, NUM_ENVS, env.action_dim) and np.all(np.abs(bank) < 1.0)
        collector.reset(seed=0)
        steps = [collector.step() for _ in range(ACTION_BANK_STEPS + 2)]
        assert all(s.phases["policy_ms"] == 0.0 for s in steps)
        actions = collector.replay.action.reshape(ACTION_BANK_STEPS + 2, NUM_ENVS, -1)
        np.testing.assert_array_equal(actions[:ACTION_BANK_STEPS], bank)
        np.testing.assert_array_equal(actions[ACTION_BANK_STEPS:], bank[:2])  # cycled
        np.testing.assert_array_equal(policy.bank, bank)  # never redrawn
        other = make_collector(env, "sac", 2, actions="pregenerated", seed=5).policy
        assert not np.array_equal(other.bank, bank)
    finally:
        env.close()


def test_step_before_reset_is_an_error() -> None:
    env = make_env("go2_joystick_flat", "mujoco", "direct", 2, 1)
    try:
        with pytest.raises(RuntimeError, match="before Collector.reset"):
            make_collector(env, "sac", 2).step()
    finally:
        env.close()
