"""g1_motion_tracking: registry, dims, reference-state reset, adaptive sampling in the env,
timings, bad configs, and manager/direct parity on MuJoCo (float64) and MotrixSim (float32)."""

from __future__ import annotations

import numpy as np
import pytest
from parity import step_both_and_compare

from envruntime.backends import make_backend
from envruntime.envs.vecenv import ENV_PHASES, VecEnv
from envruntime.robots.g1 import JOINT_NAMES, TRACKED_BODIES
from envruntime.tasks import make_env
from envruntime.tasks.g1_motion_tracking import (
    XML_PATH,
    G1MotionTrackingCfg,
    make_direct_env,
    make_manager_env,
)
from envruntime.tasks.g1_motion_tracking.clip import G1_MOTION_NPZ, load_clip

FACTORIES = {"manager": make_manager_env, "direct": make_direct_env}
STAGES = (
    "update_state.termination.compute_ms",
    "update_state.reward.compute_ms",
    "update_state.command.compute_ms",
    "update_state.command.post_compute_ms",
    "update_state.event.interval_ms",
    "update_state.observation.compute_ms",
)
NO_NOISE = {"pose_range": {}, "velocity_range": {}, "joint_position_range": (0.0, 0.0)}


def _env(variant: str, n: int, cfg: G1MotionTrackingCfg, sim: str = "mujoco") -> VecEnv:
    return FACTORIES[variant](make_backend(sim, XML_PATH, n, threads=1), cfg)


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["manager", "direct"])
def test_make_env_builds_a_vecenv(variant: str) -> None:
    env = make_env("g1_motion_tracking", "mujoco", variant, num_envs=4, threads=1)
    assert isinstance(env, VecEnv) and env.variant == variant and env.task == "g1_motion_tracking"
    assert env.action_dim == 29 and env.obs_dims == {"actor": 160, "critic": 286}
    obs = env.reset(seed=0)
    assert obs["actor"].shape == (4, 160) and obs["critic"].dtype == np.float32
    result = env.step(np.zeros((4, 29), dtype=np.float32))
    assert result.reward.shape == (4,) and result.reward.dtype == np.float32
    assert np.isfinite(result.obs["critic"]).all()
    assert set(ENV_PHASES) <= set(env.timings) and all(v >= 0.0 for v in env.timings.values())
    with pytest.raises(ValueError, match="action must have shape"):
        env.step(np.zeros((4, 12), dtype=np.float32))
    env.close()


def test_manager_timings_split_the_command_into_compute_and_post_compute() -> None:
    env = _env("manager", 4, G1MotionTrackingCfg())
    env.reset(seed=0)
    for _ in range(3):
        env.step(np.zeros((4, 29), dtype=np.float32))
        t = env.timings
        assert t["update_state.command.post_compute_ms"] > 0.0 and t["update_state.command.compute_ms"] > 0.0
        assert sum(t[s] for s in STAGES) == pytest.approx(t["update_state_ms"], rel=1e-9)
    env.close()


@pytest.mark.parametrize("variant", ["manager", "direct"])
def test_reset_puts_the_robot_on_the_reference(variant: str) -> None:
    """Without reset noise every tracked body sits on the clip at its start frame, and the
    observation's command holds the clip's next frame (the one the first step should reach)."""
    n = 8
    env = _env(variant, n, G1MotionTrackingCfg(**NO_NOISE))
    obs = env.reset(seed=4)
    clip = load_clip(G1_MOTION_NPZ)
    time_step = env.command_manager.term("motion").time_step if variant == "manager" else env.time_step
    assert len(set(time_step.tolist())) > 1  # the start frames differ
    start = (time_step - 1) % clip.num_frames
    backend = env.backend
    for b, body in enumerate(TRACKED_BODIES):
        np.testing.assert_allclose(backend.sensor(f"{body}_pos"), clip.body_pos_w[start, b], atol=2e-5)
        dots = np.abs(np.sum(backend.sensor(f"{body}_quat") * clip.body_quat_w[start, b], axis=1))
        np.testing.assert_allclose(dots, 1.0, atol=1e-6)
    joints = backend.qpos[:, [7 + JOINT_NAMES.index(j) for j in clip.joint_names]]
    np.testing.assert_allclose(joints, clip.joint_pos[start], atol=1e-6)
    expected = np.hstack([clip.joint_pos[time_step], clip.joint_vel[time_step]])
    np.testing.assert_allclose(obs["critic"][:, :58], expected, atol=1e-6)
    # the reference torso one frame ahead is within centimetres of the robot torso
    assert np.all(np.linalg.norm(obs["critic"][:, 58:61], axis=1) < 0.05)
    env.close()


@pytest.mark.parametrize("variant", ["manager", "direct"])
def test_reset_rows_are_written_to_the_backend_once(variant: str) -> None:
    """The motion command writes the full state of reset rows, so no default-pose write precedes it."""
    n = 4
    env = _env(variant, n, G1MotionTrackingCfg(episode_length_s=0.04))  # 2-step episodes
    calls: list[list[int]] = []
    write = env.backend.reset
    env.backend.reset = lambda rows, qpos, qvel: (calls.append(rows.tolist()), write(rows, qpos, qvel))
    env.reset(seed=0)
    assert calls == [list(range(n))]
    zero = np.zeros((n, 29), dtype=np.float32)
    env.step(zero)
    assert len(calls) == 1
    result = env.step(zero)  # every env times out and is reset
    assert result.truncated.all() and calls[1:] == [list(range(n))]
    env.close()


def test_failures_feed_the_adaptive_sampler_and_reset_seed_starts_clean() -> None:
    n = 16
    env = _env("manager", n, G1MotionTrackingCfg())
    motion = env.command_manager.term("motion")
    first = env.reset(seed=9)["critic"].copy()
    rng = np.random.default_rng(0)
    failures = 0
    for _ in range(60):
        failures += int(env.step((3.0 * rng.standard_normal((n, 29))).astype(np.float32)).terminated.sum())
    assert failures > 0 and motion.sampler.failure_rate.sum() > 0.0
    np.testing.assert_array_equal(env.reset(seed=9)["critic"], first)
    assert motion.sampler.failure_rate.sum() == 0.0
    env.close()


@pytest.mark.parametrize("variant", ["manager", "direct"])
@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"decimation": 2}, "50 fps but the control step is 0.01 s"),
        ({"end_effectors": ("left_hand",)}, "not clip bodies"),
        ({"pose_range": {"pitchh": (0.0, 0.1)}}, "unknown pose_range keys"),
        ({"anchor_body": "head"}, "anchor_body 'head' is not a clip body"),
    ],
)
def test_bad_configs_are_named(variant: str, change: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _env(variant, 2, G1MotionTrackingCfg(**change))


def test_manager_and_direct_agree_bit_for_bit() -> None:
    """300 steps from one seed and one action sequence: half the envs act wildly and fail the
    tracking limits, the others act gently and time out (1 s episodes), pushes every 0.2-0.6 s.
    Both variants evaluate the same row formulas (envruntime.kernels) in the same order with the
    same random numbers, so equality is exact, not approximate."""
    n = 16
    cfg = G1MotionTrackingCfg(episode_length_s=1.0, push_interval_s=(0.2, 0.6), push_vel=1.0)
    envs = [_env(v, n, cfg) for v in ("manager", "direct")]
    amplitude = np.where(np.arange(n) < n // 2, 3.0, 0.1)[:, None]
    terminated, truncated, _ = step_both_and_compare(envs, amplitude, 300)
    print(f"parity: {terminated} terminated, {truncated} truncated")
    assert terminated >= 10 and truncated >= 10
    np.testing.assert_array_equal(envs[0].command_manager.term("motion").sampler.failure_rate,
                                  envs[1].sampler.failure_rate)  # fmt: skip


@pytest.mark.slow
def test_variants_agree_on_the_float32_motrix_backend() -> None:
    envs = [make_env("g1_motion_tracking", "motrix", v, num_envs=4, threads=1) for v in ("manager", "direct")]
    assert envs[0].backend.dtype == np.float32
    *_, m = step_both_and_compare(envs, 0.3, 20, seed=2, action_seed=0)
    assert np.isfinite(m.obs["critic"]).all() and np.all(envs[0].backend.qpos[:, 2] > 0.3)
