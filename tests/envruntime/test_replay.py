"""Replay ring: preallocation, vectorised wrap-around, direct slot writes, terminal next_obs kept for
done rows, bytes counted."""

import numpy as np
import pytest

from envruntime.collect.replay import ReplayBuffer

OBS_DIMS = {"actor": 3, "critic": 5}
ACTION_DIM = 2


def batch(n: int, value: float) -> dict[str, np.ndarray]:
    return {g: np.full((n, d), value, dtype=np.float32) for g, d in OBS_DIMS.items()}


def insert(replay: ReplayBuffer, n: int, value: float, done: np.ndarray | None = None) -> None:
    """One transition of ``n`` rows, no row ended (``next_obs`` is the step's obs)."""
    done = np.zeros(n, dtype=bool) if done is None else done
    replay.put_obs(batch(n, value))
    replay.put_transition(np.full((n, ACTION_DIM), value, dtype=np.float32),
                          np.full(n, value, dtype=np.float32), done, np.zeros(n, dtype=bool),
                          batch(n, value + 0.5))


def test_arrays_are_preallocated_float32() -> None:
    replay = ReplayBuffer(10, OBS_DIMS, ACTION_DIM)
    arrays = [*replay.obs.values(), *replay.next_obs.values(), replay.action, replay.reward,
              replay.terminated, replay.truncated]
    assert all(a.dtype == np.float32 and len(a) == 10 for a in arrays)
    assert replay.obs["critic"].shape == (10, 5)
    assert replay.nbytes == 10 * 4 * (2 * (3 + 5) + ACTION_DIM + 3)


def test_wrap_around_splits_a_batch_across_the_end() -> None:
    replay = ReplayBuffer(10, OBS_DIMS, ACTION_DIM)
    for value in (1.0, 2.0):
        insert(replay, 4, value)
    assert (replay.cursor, replay.size) == (8, 8)
    insert(replay, 4, 3.0)  # rows 8, 9 then 0, 1
    assert (replay.cursor, replay.size) == (2, 10)
    np.testing.assert_array_equal(replay.reward, [3, 3, 1, 1, 2, 2, 2, 2, 3, 3])
    np.testing.assert_array_equal(replay.obs["actor"][:, 0], [3, 3, 1, 1, 2, 2, 2, 2, 3, 3])
    np.testing.assert_array_equal(replay.next_obs["critic"][:, 4],
                                  [3.5, 3.5, 1.5, 1.5, 2.5, 2.5, 2.5, 2.5, 3.5, 3.5])
    np.testing.assert_array_equal(replay.action[:, 1], replay.reward)


def test_terminal_next_obs_and_flags_stored_for_done_rows() -> None:
    replay = ReplayBuffer(6, OBS_DIMS, ACTION_DIM)
    obs = batch(3, 0.0)
    reset_obs = batch(3, 9.0)  # what the env returns after auto-reset
    final_obs = {g: np.full((1, d), -7.0, np.float32) for g, d in OBS_DIMS.items()}  # row 1's terminal obs
    terminated = np.array([False, True, False])
    truncated = np.array([False, False, True])
    replay.put_obs(obs)
    replay.put_transition(np.zeros((3, ACTION_DIM), np.float32), np.ones(3, np.float32),
                          terminated, truncated, reset_obs, final_obs, np.array([1]))
    np.testing.assert_array_equal(replay.next_obs["actor"][:3, 0], [9.0, -7.0, 9.0])
    np.testing.assert_array_equal(replay.next_obs["critic"][:3, 4], [9.0, -7.0, 9.0])
    np.testing.assert_array_equal(replay.terminated[:3], [0.0, 1.0, 0.0])
    np.testing.assert_array_equal(replay.truncated[:3], [0.0, 0.0, 1.0])
    replay.put_obs(reset_obs)  # the next transition starts from the post-reset observation
    replay.put_transition(np.zeros((3, ACTION_DIM), np.float32), np.ones(3, np.float32),
                          terminated, truncated, reset_obs, reset_obs, np.zeros(0, np.int64))
    np.testing.assert_array_equal(replay.obs["actor"][3:6, 0], [9.0, 9.0, 9.0])
    np.testing.assert_array_equal(replay.next_obs["actor"][3:6, 0], [9.0, 9.0, 9.0])


def test_terminal_rows_follow_the_wrap_around() -> None:
    replay = ReplayBuffer(6, OBS_DIMS, ACTION_DIM)
    insert(replay, 4, 1.0)  # cursor 4: the next batch takes rows 4, 5, 0, 1
    replay.put_obs(batch(4, 2.0))
    final_obs = {g: np.array([[-3.0] * d, [-4.0] * d], np.float32) for g, d in OBS_DIMS.items()}
    replay.put_transition(np.zeros((4, ACTION_DIM), np.float32), np.zeros(4, np.float32),
                          np.array([False, True, False, True]), np.zeros(4, bool), batch(4, 2.5),
                          final_obs, np.array([1, 3]))
    np.testing.assert_array_equal(replay.next_obs["actor"][:, 0], [2.5, -4.0, 1.5, 1.5, 2.5, -3.0])


def test_put_obs_writes_into_the_slot_and_size_counts_complete_rows_only() -> None:
    replay = ReplayBuffer(8, OBS_DIMS, ACTION_DIM)
    for value in (1.0, 2.0):
        insert(replay, 4, value)
    assert replay.size == 8
    replay.put_obs(batch(4, 3.0))  # the env's next observation, before its step: rows 0-3
    np.testing.assert_array_equal(replay.obs["actor"][:, 0], [3, 3, 3, 3, 2, 2, 2, 2])
    assert replay.size == 4  # rows 0-3 hold no complete transition until put_transition
    replay.put_transition(np.zeros((4, ACTION_DIM), np.float32), np.zeros(4, np.float32),
                          np.zeros(4, bool), np.zeros(4, bool), batch(4, 3.5))
    assert (replay.size, replay.cursor) == (8, 4)


def test_bytes_written_counts_one_full_copy_per_array_plus_terminal_rows() -> None:
    replay = ReplayBuffer(8, OBS_DIMS, ACTION_DIM)
    row = 4 * (3 + 5)  # float32 bytes of one row of every observation group
    replay.put_obs(batch(4, 0.0))
    assert replay.bytes_written == 4 * row
    replay.put_transition(np.zeros((4, ACTION_DIM), np.float32), np.zeros(4, np.float32),
                          np.zeros(4, bool), np.zeros(4, bool), batch(4, 1.0),
                          batch(1, -1.0), np.array([2]))
    assert replay.bytes_written == 4 * row + 4 * (4 * (ACTION_DIM + 3) + row) + row


def test_full_capacity_batches_overwrite_oldest_block() -> None:
    num_envs, steps = 4, 3
    replay = ReplayBuffer(steps * num_envs, OBS_DIMS, ACTION_DIM)
    for value in range(5):
        insert(replay, num_envs, float(value))
    assert replay.size == steps * num_envs and replay.cursor == (5 * num_envs) % (steps * num_envs)
    assert sorted(set(replay.reward.tolist())) == [2.0, 3.0, 4.0]


def test_bad_sizes_are_rejected() -> None:
    with pytest.raises(ValueError, match="capacity must be positive"):
        ReplayBuffer(0, OBS_DIMS, ACTION_DIM)
    replay = ReplayBuffer(3, OBS_DIMS, ACTION_DIM)
    with pytest.raises(ValueError, match="exceeds replay capacity 3"):
        insert(replay, 4, 1.0)
    with pytest.raises(RuntimeError, match="needs a put_obs of 2 rows first"):
        replay.put_transition(np.zeros((2, ACTION_DIM), np.float32), np.zeros(2, np.float32),
                              np.zeros(2, bool), np.zeros(2, bool), batch(2, 0.0))
