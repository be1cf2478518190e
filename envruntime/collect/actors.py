"""Policy networks the collector samples actions from: SAC and FlashSAC actors.

Both map an ``(N, obs_dim)`` float32 observation to a tanh-squashed Gaussian action in
``(-1, 1)^action_dim``. Only collection runs here (no gradient updates), so ``act`` is meant to
be called under ``torch.inference_mode`` with the module in ``eval`` mode.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

LOG_STD_MIN = -5.0
LOG_STD_MAX = 2.0


class TanhGaussianHead(nn.Module):
    """Linear layer to (mean, log_std); samples ``tanh(mean + std * eps)``."""

    def __init__(self, in_dim: int, action_dim: int) -> None:
        super().__init__()
        self.action_dim = action_dim
        self.linear = nn.Linear(in_dim, 2 * action_dim)

    def forward(self, features: torch.Tensor, deterministic: bool = False) -> torch.Tensor:
        mean, log_std = self.linear(features).split(self.action_dim, dim=-1)
        if deterministic:
            return torch.tanh(mean)
        std = log_std.clamp(LOG_STD_MIN, LOG_STD_MAX).exp()
        return torch.tanh(torch.addcmul(mean, std, torch.randn_like(mean)))


@dataclass(frozen=True)
class SacActorConfig:
    """SAC actor: an MLP of Linear -> LayerNorm -> SiLU blocks."""

    hidden: tuple[int, ...] = (512, 256, 128)


class SacActor(nn.Module):
    """SAC actor: LayerNorm + SiLU MLP trunk and a tanh-Gaussian head."""

    def __init__(self, obs_dim: int, action_dim: int, cfg: SacActorConfig | None = None) -> None:
        super().__init__()
        cfg = cfg or SacActorConfig()
        layers: list[nn.Module] = []
        width = obs_dim
        for hidden in cfg.hidden:
            layers += [nn.Linear(width, hidden), nn.LayerNorm(hidden), nn.SiLU()]
            width = hidden
        self.trunk = nn.Sequential(*layers)
        self.head = TanhGaussianHead(width, action_dim)

    def forward(self, obs: torch.Tensor, deterministic: bool = False) -> torch.Tensor:
        return self.head(self.trunk(obs), deterministic)


@dataclass(frozen=True)
class FlashSacActorConfig:
    """FlashSAC actor: BatchNorm embedder, ``blocks`` inverted-residual blocks of ``width``
    channels expanded ``expansion`` times inside each block."""

    width: int = 256
    blocks: int = 2
    expansion: int = 4


class InvertedResidualBlock(nn.Module):
    """``x + W_down(SiLU(W_up(RMSNorm(x))))`` with ``W_up`` widening by ``expansion``."""

    def __init__(self, width: int, expansion: int) -> None:
        super().__init__()
        self.norm = nn.RMSNorm(width)
        self.up = nn.Linear(width, width * expansion)
        self.act = nn.SiLU()
        self.down = nn.Linear(width * expansion, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.down(self.act(self.up(self.norm(x))))


class FlashSacActor(nn.Module):
    """FlashSAC actor: BatchNorm'd observation embedding, inverted-residual trunk, final RMSNorm,
    tanh-Gaussian head."""

    def __init__(self, obs_dim: int, action_dim: int, cfg: FlashSacActorConfig | None = None) -> None:
        super().__init__()
        cfg = cfg or FlashSacActorConfig()
        self.embed = nn.Sequential(nn.BatchNorm1d(obs_dim), nn.Linear(obs_dim, cfg.width))
        self.blocks = nn.Sequential(*(InvertedResidualBlock(cfg.width, cfg.expansion)
                                      for _ in range(cfg.blocks)))
        self.norm = nn.RMSNorm(cfg.width)
        self.head = TanhGaussianHead(cfg.width, action_dim)

    def forward(self, obs: torch.Tensor, deterministic: bool = False) -> torch.Tensor:
        return self.head(self.norm(self.blocks(self.embed(obs))), deterministic)


ALGOS: dict[str, type[nn.Module]] = {"sac": SacActor, "flashsac": FlashSacActor}


def make_actor(algo: str, obs_dim: int, action_dim: int) -> nn.Module:
    """Build the default-sized actor of ``algo``, in eval mode (BatchNorm uses running stats)."""
    if algo not in ALGOS:
        raise ValueError(f"unknown algo {algo!r}; valid: {', '.join(ALGOS)}")
    return ALGOS[algo](obs_dim, action_dim).eval()
