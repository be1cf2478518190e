"""The managers, each driven through a small Go2 env (N=8) and checked against NumPy."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from envruntime.backends.mujoco_backend import MujocoBackend
from envruntime.envs.manager_based import UPDATE_STATE_STAGES, ManagerBasedEnv
from envruntime.envs.vecenv import ENV_PHASES
from envruntime.managers.mdp import events, observations, rewards, terminations
from envruntime.managers.terms import EventTermCfg, ObsGroupCfg, ObsTermCfg, RewardTermCfg, TerminationTermCfg
from envruntime.tasks.go2_joystick_flat import XML_PATH, Go2JoystickCfg
from envruntime.tasks.go2_joystick_flat.manager_cfg import manager_cfg

N = 8


def _env(task: Go2JoystickCfg | None = None, **overrides) -> ManagerBasedEnv:
    cfg = dataclasses.replace(manager_cfg(task or Go2JoystickCfg()), **overrides)
    return ManagerBasedEnv(cfg, MujocoBackend(XML_PATH, num_envs=N, threads=1))


@pytest.fixture
def env() -> ManagerBasedEnv:
    e = _env()
    e.reset(seed=1)
    yield e
    e.close()


def test_action_manager_targets_history_and_reset(env: ManagerBasedEnv) -> None:
    am, info = env.action_manager, env.backend.info
    a1 = np.linspace(-1, 1, N * 12, dtype=np.float32).reshape(N, 12)
    a2 = 2 * a1
    am.process(a1)
    am.process(a2)
    np.testing.assert_array_equal(am.prev_action, a1)
    np.testing.assert_array_equal(am.action, a2)
    default = env.default_qpos[info.joint_qpos_adr]
    expected = np.clip(default + 0.25 * a2.astype(float), info.ctrl_range[:, 0], info.ctrl_range[:, 1])
    np.testing.assert_allclose(am.ctrl, expected)
    am.reset(np.array([3]))
    assert not am.action[3].any() and not am.prev_action[3].any() and am.action[2].any()
    with pytest.raises(ValueError, match=r"action must have shape \(8, 12\)"):
        am.process(np.zeros((N, 5), dtype=np.float32))


def test_observation_groups_noise_and_layout(env: ManagerBasedEnv) -> None:
    om, b = env.observation_manager, env.backend
    assert om.dims == {"actor": 48, "critic": 56}
    critic, actor = om.obs["critic"], om.obs["actor"]
    assert critic.dtype == np.float32 and critic.shape == (N, 56)
    # the critic is noise-free: its columns are the raw quantities
    np.testing.assert_allclose(critic[:, 0:3], b.sensor("local_linvel"), rtol=1e-6, atol=1e-6)
    joint_pos = b.qpos[:, 7:] - env.default_qpos[7:]
    np.testing.assert_allclose(critic[:, 9:21], joint_pos, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(critic[:, 21:33], 0.05 * b.qvel[:, 6:], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(critic[:, 45:48], env.command_manager.command("twist"), rtol=1e-6)
    foot_z = np.stack([b.sensor(f"{leg}_foot_pos")[:, 2] for leg in ("FL", "FR", "RL", "RR")], 1)
    np.testing.assert_allclose(critic[:, 48:52], foot_z - 0.022, rtol=1e-5, atol=1e-6)
    assert set(np.unique(critic[:, 52:56])) <= {0.0, 1.0}
    # the actor's noise stays within each term's amplitude (joint_vel: 1.5 before its 0.05 scale)
    diff = np.abs(actor - critic[:, :48])
    assert diff[:, 0:3].max() <= 0.1 + 1e-6 and diff[:, 0:3].max() > 0.0
    assert diff[:, 21:33].max() <= 1.5 * 0.05 + 1e-6
    np.testing.assert_array_equal(actor[:, 33:48], critic[:, 33:48])


def test_observation_history_and_row_subset() -> None:
    group = ObsGroupCfg({"gyro": ObsTermCfg(observations.sensor, {"name": "gyro"}, clip=(-0.01, 0.01))},
                        history_length=3)  # fmt: skip
    e = _env(observations={"policy": group})
    e.reset(seed=0)
    out = e.observation_manager.obs["policy"]
    assert out.shape == (N, 9)
    np.testing.assert_array_equal(out[:, 0:3], out[:, 6:9])  # fresh rows fill every slot
    frames = [out[:, 6:9].copy()]
    for _ in range(2):
        e.step(np.zeros((N, 12), dtype=np.float32))
        frames.append(np.clip(e.backend.sensor("gyro"), -0.01, 0.01).astype(np.float32))
    np.testing.assert_allclose(out, np.concatenate(frames, axis=1), rtol=1e-6)
    before = out.copy()
    e.backend.step(e.action_manager.ctrl, 4)
    e.observation_manager.compute(np.array([2, 5]))
    changed = np.flatnonzero(np.any(out != before, axis=1))
    assert set(changed) <= {2, 5}
    np.testing.assert_array_equal(out[2, 0:6], before[2, 3:9])
    e.close()


def test_unknown_names_fail_at_construction() -> None:
    bad = ObsGroupCfg({"x": ObsTermCfg(observations.sensor, {"name": "no_such_sensor"})})
    with pytest.raises(ValueError, match="observation term 'actor.x'.*no_such_sensor"):
        _env(observations={"actor": bad})
    bad_reward = {"r": RewardTermCfg(rewards.posture, 1.0, {"std": 1.0, "joints": ["knee"]})}
    with pytest.raises(ValueError, match="reward term 'r'.*knee"):
        _env(rewards=bad_reward)
    with pytest.raises(ValueError, match="no keyframe 'crouch'"):
        _env(keyframe="crouch")


def test_reward_manager_weights_terms_by_dt(env: ManagerBasedEnv) -> None:
    rm = env.reward_manager
    env.step(np.full((N, 12), 0.3, dtype=np.float32))
    weights = np.array([cfg.weight for cfg in manager_cfg(Go2JoystickCfg()).rewards.values()])
    np.testing.assert_allclose(rm.reward, (rm.raw.T * weights * env.step_dt).sum(1), rtol=1e-6)
    upright = rm.raw[rm.term_names.index("upright")]
    g = [env.backend.sensor("orientation")]  # recompute through NumPy: exp(-|g_xy|^2 / 0.3^2)
    w, x, y, z = g[0].T
    gx, gy = -2 * (x * z - w * y), -2 * (y * z + w * x)
    np.testing.assert_allclose(upright, np.exp(-(gx**2 + gy**2) / 0.09), rtol=1e-9)
    assert rm.raw[rm.term_names.index("action_rate")].max() > 0.0


def test_termination_time_out_truncates_and_falls_terminate() -> None:
    e = _env(episode_length_s=0.06)  # 3 control steps
    e.reset(seed=0)
    zero = np.zeros((N, 12), dtype=np.float32)
    for _ in range(2):
        result = e.step(zero)
        assert not result.truncated.any()
    result = e.step(zero)
    assert result.truncated.all() and not result.terminated.any()
    assert (e.episode_length == 0).all()
    e.close()
    e = _env(terminations={
        "time_out": TerminationTermCfg(terminations.time_out, time_out=True),
        "tilted": TerminationTermCfg(terminations.bad_orientation, {"limit_angle": 0.0}),
    }, episode_length_s=0.02)  # fmt: skip
    e.reset(seed=0)
    result = e.step(zero)  # tilted (limit 0) and timed out at once: terminal wins
    assert result.terminated.all() and not result.truncated.any()
    e.close()


def test_event_reset_rows_and_interval_push() -> None:
    push = EventTermCfg(events.push_by_velocity, "interval", {"velocity_range": {"vx": (2.0, 2.0)}},
                        interval_range_s=(0.02, 0.02))  # fmt: skip
    task_events = dict(manager_cfg(Go2JoystickCfg()).events, push=push)
    e = _env(events=task_events)
    e.reset(seed=0)
    base_xy = e.backend.qpos[:, :2].copy()
    assert np.abs(base_xy).max() <= 0.5 and np.unique(base_xy[:, 0]).size == N
    joints = e.backend.qpos[:, 7:] - e.default_qpos[7:]
    assert np.abs(joints).max() <= 0.1 + 1e-12
    e.backend.step(e.action_manager.ctrl, 1)
    before = e.backend.qvel.copy()
    e.event_manager.apply_interval()  # every timer (0.02 s) runs out now: +2 m/s in x
    np.testing.assert_allclose(e.backend.qvel[:, 0], before[:, 0] + 2.0)
    qpos = e.backend.qpos.copy()
    e.event_manager.reset(np.array([0, 6]))
    np.testing.assert_array_equal(e.backend.qpos[1:6], qpos[1:6])
    assert not np.array_equal(e.backend.qpos[0], qpos[0])
    e.close()
    with pytest.raises(ValueError, match="interval events need interval_range_s"):
        _env(events={"p": EventTermCfg(events.push_by_velocity, "interval", {"velocity_range": {}})})
    with pytest.raises(ValueError, match="unknown pose_range keys"):
        _env(events={"r": EventTermCfg(events.reset_root_uniform, "reset", {"pose_range": {"q": (0, 1)}})})


def test_event_manager_can_leave_the_reset_state_to_a_later_stage() -> None:
    """With events_write_reset_state off, reset writes no state (a command would) but still
    redraws the interval timers; reset events are refused, naming the term."""
    push = manager_cfg(Go2JoystickCfg()).events["push"]
    e = _env(events={"push": push}, events_write_reset_state=False)
    e.reset(seed=0)
    e.step(np.zeros((N, 12), dtype=np.float32))
    qpos, qvel = e.backend.qpos.copy(), e.backend.qvel.copy()
    timers = e.event_manager._interval_terms[0][2]
    before = timers.copy()
    e.event_manager.reset(np.array([1, 4]))
    np.testing.assert_array_equal(e.backend.qpos, qpos)
    np.testing.assert_array_equal(e.backend.qvel, qvel)
    changed = np.flatnonzero(timers != before)
    np.testing.assert_array_equal(changed, [1, 4])
    e.close()
    with pytest.raises(ValueError, match="event term 'reset_base': reset events need the event manager"):
        _env(events_write_reset_state=False)


def test_command_resampling_and_standing() -> None:
    task = Go2JoystickCfg(command_resampling_s=(0.05, 0.05), rel_heading_envs=0.0, rel_standing_envs=0.0)
    e = _env(task)
    e.reset(seed=0)
    command = e.command_manager.command("twist")
    first = command.copy()
    assert np.all(np.abs(first[:, 0]) <= 1.0) and np.all(np.abs(first[:, 1]) <= 0.5)
    zero = np.zeros((N, 12), dtype=np.float32)
    e.step(zero)
    np.testing.assert_array_equal(command, first)
    e.step(zero)  # 0.05 s reached: every row resamples
    assert not np.any(command == first)
    e.close()
    e = _env(Go2JoystickCfg(rel_standing_envs=1.0))
    e.reset(seed=0)
    assert not e.command_manager.command("twist").any()
    with pytest.raises(KeyError, match="no command 'walk'"):
        e.command_manager.command("walk")
    e.close()


def test_heading_envs_steer_toward_heading() -> None:
    e = _env(Go2JoystickCfg(rel_heading_envs=1.0, rel_standing_envs=0.0))
    e.reset(seed=0)
    term = e.command_manager.term("twist")
    w, x, y, z = e.backend.sensor("orientation").T
    yaw = np.arctan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))
    err = np.angle(np.exp(1j * (term.heading - yaw)))
    np.testing.assert_allclose(term.command[:, 2], np.clip(0.5 * err, -1, 1), atol=1e-12)
    e.close()


def test_timings_have_the_same_keys_every_step(env: ManagerBasedEnv) -> None:
    keys = set(ENV_PHASES) | set(UPDATE_STATE_STAGES)
    for _ in range(3):
        env.step(np.zeros((N, 12), dtype=np.float32))
        assert set(env.timings) == keys
        assert env.timings["update_state_ms"] >= env.timings["update_state.observation.compute_ms"]
    assert env.manager_names == ("action", "observation", "reward", "termination", "event", "command")

