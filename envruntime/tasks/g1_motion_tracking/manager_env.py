"""The manager variant's env: ``ManagerBasedEnv`` whose command ``command`` is a ``MotionCommand``.

Everything motion-specific runs through the managers' hooks: the command's re-anchoring is its
``post_compute`` stage (timed as ``update_state.command.post_compute_ms``), ``reset(seed)``
restarts its adaptive sampling and clears the termination flags, and the command writes the
state of reset rows (the task config turns the event manager's own write off).
"""

from __future__ import annotations

from envruntime.backends.base import Backend
from envruntime.envs.manager_based import ManagerBasedEnv, ManagerBasedEnvCfg
from envruntime.tasks.g1_motion_tracking.motion_command import MotionCommand


class MotionTrackingEnv(ManagerBasedEnv):
    """``ManagerBasedEnv``, checked to track a ``MotionCommand`` named ``command``."""

    def __init__(self, cfg: ManagerBasedEnvCfg, backend: Backend, command: str) -> None:
        super().__init__(cfg, backend)
        motion = self.command_manager.term(command)
        if not isinstance(motion, MotionCommand):
            raise ValueError(f"command {command!r} is a {type(motion).__name__}, not a MotionCommand")
