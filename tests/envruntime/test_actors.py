"""Actors: shapes, tanh bounds, sampling vs deterministic, both algos."""

import pytest
import torch

from envruntime.collect.actors import ALGOS, FlashSacActor, SacActor, make_actor

OBS_DIM, ACTION_DIM, BATCH = 45, 12, 16


@pytest.mark.parametrize("algo", sorted(ALGOS))
def test_actor_output_shape_and_tanh_bounds(algo: str) -> None:
    torch.manual_seed(0)
    actor = make_actor(algo, OBS_DIM, ACTION_DIM)
    obs = 100.0 * torch.randn(BATCH, OBS_DIM)  # large inputs drive the pre-tanh values far out
    with torch.inference_mode():
        action = actor(obs)
    assert action.shape == (BATCH, ACTION_DIM)
    assert action.dtype == torch.float32
    assert torch.all(action.abs() <= 1.0)
    assert torch.isfinite(action).all()


@pytest.mark.parametrize("algo", sorted(ALGOS))
def test_actor_samples_are_stochastic_and_deterministic_mode_is_not(algo: str) -> None:
    torch.manual_seed(0)
    actor = make_actor(algo, OBS_DIM, ACTION_DIM)
    obs = torch.randn(BATCH, OBS_DIM)
    with torch.inference_mode():
        assert not torch.equal(actor(obs), actor(obs))
        assert torch.equal(actor(obs, deterministic=True), actor(obs, deterministic=True))


def test_make_actor_builds_the_named_architecture_in_eval_mode() -> None:
    sac = make_actor("sac", OBS_DIM, ACTION_DIM)
    flash = make_actor("flashsac", OBS_DIM, ACTION_DIM)
    assert isinstance(sac, SacActor) and isinstance(flash, FlashSacActor)
    assert not sac.training and not flash.training
    widths = [m.out_features for m in sac.trunk if isinstance(m, torch.nn.Linear)]
    assert widths == [512, 256, 128]
    assert any(isinstance(m, torch.nn.LayerNorm) for m in sac.modules())
    assert any(isinstance(m, torch.nn.BatchNorm1d) for m in flash.modules())
    assert any(isinstance(m, torch.nn.RMSNorm) for m in flash.modules())


def test_flashsac_eval_batchnorm_accepts_a_single_row() -> None:
    actor = make_actor("flashsac", OBS_DIM, ACTION_DIM)
    with torch.inference_mode():
        assert actor(torch.randn(1, OBS_DIM)).shape == (1, ACTION_DIM)


def test_unknown_algo_lists_valid_values() -> None:
    with pytest.raises(ValueError, match="valid: sac, flashsac"):
        make_actor("ppo", OBS_DIM, ACTION_DIM)
