"""Where the collector's actions come from: the actor on a torch device, or a pregenerated bank.

``--actions actor`` (``ActorPolicy``): the ``actor`` observation goes to the actor's device, the
actor samples, the action comes back to a host NumPy array. On CUDA the host buffer is pinned and
every call ends with a device synchronise, so ``policy_ms`` holds both transfers and the forward.

``--actions pregenerated`` (``PregeneratedPolicy``): the seeds' collector method, where policy
inference belongs to the learner. A bank of ``ACTION_BANK_STEPS`` vector steps of random actions
(``tanh`` of standard normals, the shape of an untrained actor's samples) is drawn once, before
the measured window, and cycled; no forward runs while collecting and ``policy_ms`` is 0.0.

Both return arrays owned by the policy and overwritten by a later call.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
import torch
from torch import nn

ACTIONS: tuple[str, ...] = ("actor", "pregenerated")
DEVICES: tuple[str, ...] = ("cpu", "cuda")
ACTION_BANK_STEPS = 16


class CudaUnavailableError(ValueError):
    """``--device cuda`` on a host where torch sees no CUDA device."""


class Policy(Protocol):
    runs_forward: bool  # False: no actor inside the measured window (policy_ms reported as 0.0)

    def act(self, obs: np.ndarray) -> np.ndarray:
        """An (N, action_dim) float32 action for the (N, obs_dim) ``actor`` observation."""
        ...

    def audit(self) -> dict[str, Any]:
        """What the header's audit records about this policy."""
        ...

    def synchronize(self) -> None:
        """Wait until the policy's device has finished its queued work."""
        ...


def torch_device(name: str) -> torch.device:
    """The torch device for ``--device name``; CudaUnavailableError when CUDA is asked and absent."""
    if name not in DEVICES:
        raise ValueError(f"unknown device {name!r}; valid: {', '.join(DEVICES)}")
    if name == "cuda" and not torch.cuda.is_available():
        built = torch.version.cuda or "none (a CPU-only build)"
        raise CudaUnavailableError(
            f"--device cuda: torch sees no CUDA device (torch {torch.__version__}, CUDA {built}); "
            "use --device cpu")
    return torch.device(name)


class ActorPolicy:
    """``actor`` (an eval-mode module) run on ``device`` for ``num_envs`` rows."""

    runs_forward = True

    def __init__(self, actor: nn.Module, device: torch.device, num_envs: int, action_dim: int) -> None:
        self.device = device
        self.actor = actor.to(device)
        self._cuda = device.type == "cuda"
        self._host = torch.empty((num_envs, action_dim), pin_memory=True) if self._cuda else None

    def act(self, obs: np.ndarray) -> np.ndarray:
        with torch.inference_mode():
            x = torch.from_numpy(obs)
            if not self._cuda:
                return self.actor(x).numpy()
            action = self.actor(x.to(self.device, non_blocking=True))
            self._host.copy_(action, non_blocking=True)
            torch.cuda.synchronize(self.device)
            return self._host.numpy()

    def synchronize(self) -> None:
        if self._cuda:
            torch.cuda.synchronize(self.device)

    def audit(self) -> dict[str, Any]:
        name = torch.cuda.get_device_name(self.device) if self._cuda else "cpu"
        return {"actions": "actor", "device": self.device.type, "device_name": name,
                "actor_class": type(self.actor).__name__}


class PregeneratedPolicy:
    """A seeded bank of ``steps`` random (num_envs, action_dim) actions, returned in turn."""

    runs_forward = False

    def __init__(self, num_envs: int, action_dim: int, seed: int, steps: int = ACTION_BANK_STEPS) -> None:
        rng = np.random.default_rng(seed)
        self.bank = np.tanh(rng.standard_normal((steps, num_envs, action_dim), dtype=np.float32))
        self._next = 0

    def act(self, obs: np.ndarray) -> np.ndarray:
        action = self.bank[self._next]
        self._next = (self._next + 1) % len(self.bank)
        return action

    def synchronize(self) -> None:
        """Nothing runs on a device."""

    def audit(self) -> dict[str, Any]:
        return {"actions": "pregenerated", "device": None, "device_name": None,
                "action_bank_steps": len(self.bank)}
