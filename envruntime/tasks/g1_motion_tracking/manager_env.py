"""The manager variant's env: ``ManagerBasedEnv`` plus the motion command's two stages in the
timings and a clean start of its adaptive sampling on ``reset(seed)``."""

from __future__ import annotations

import numpy as np

from envruntime.backends.base import Backend
from envruntime.envs.manager_based import ManagerBasedEnv, ManagerBasedEnvCfg
from envruntime.managers.motion_command import MotionCommand
from envruntime.vecenv import StepResult

COMPUTE = "update_state.command.compute_ms"
POST_COMPUTE = "update_state.command.post_compute_ms"


class MotionTrackingEnv(ManagerBasedEnv):
    """``update_state.command.compute_ms`` covers the command's compute stage (next frame,
    failure statistics) and ``update_state.command.post_compute_ms`` its re-anchoring of the
    reference bodies; their sum is what ``ManagerBasedEnv`` times as the command's compute."""

    def __init__(self, cfg: ManagerBasedEnvCfg, backend: Backend, num_envs: int, command: str) -> None:
        super().__init__(cfg, backend, num_envs)
        motion = self.command_manager.term(command)
        if not isinstance(motion, MotionCommand):
            raise ValueError(f"command {command!r} is a {type(motion).__name__}, not a MotionCommand")
        self._motion = motion
        self.timings[POST_COMPUTE] = 0.0

    def reset(self, seed: int) -> dict[str, np.ndarray]:
        """A fresh seeded start: no failure statistics, no episode counted as failed."""
        self._motion.restart()
        self.termination_manager.terminated[:] = False
        return super().reset(seed)

    def step(self, action: np.ndarray) -> StepResult:
        """``ManagerBasedEnv.step`` with the command's time split into its two stages."""
        result = super().step(action)
        post = self._motion.post_compute_ms
        self.timings[COMPUTE] -= post
        self.timings[POST_COMPUTE] = post
        return result
