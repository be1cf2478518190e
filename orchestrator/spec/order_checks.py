"""The checks of ``order: lockstep`` and ``quiet:`` (docs/sweep-yaml.md), at load: exit 2 naming the key."""

from __future__ import annotations

import math

from orchestrator.capabilities import Capability, describe
from orchestrator.errors import SpecError
from orchestrator.spec.bounds import check_at_most
from orchestrator.spec.commands import is_envruntime_command, placeholders_in
from orchestrator.spec.schema import LockstepSpec, Order, SweepSpec

MAX_BLOCKS = 10_000  # measured blocks a side per round
MAX_BLOCK_STEPS = 1_000_000


def check_lockstep(spec: SweepSpec) -> None:
    """``lockstep`` only with ``order: lockstep`` (which fills in its defaults); a protocol whose bench
    the worker can pace; positive block sizes; a command that passes ``{control}``."""
    if spec.order is not Order.lockstep:
        if spec.lockstep is not None:
            raise SpecError(f"the lockstep block applies to order: lockstep; this sweep's order is "
                            f"{spec.order.value}", "lockstep")
        return
    spec.lockstep = spec.lockstep or LockstepSpec()
    info = describe(spec.protocol.value)
    if not info.has(Capability.CONTROL_CHANNEL | Capability.STEPS):
        raise SpecError(f"lockstep needs a protocol whose bench reports steps and takes the control channel; "
                        f"protocol {spec.protocol.value} has no control channel (use v1)", "order")
    for name, minimum, most in (("blocks", 1, MAX_BLOCKS), ("block_steps", 1, MAX_BLOCK_STEPS),
                                ("block_warmup", 0, MAX_BLOCK_STEPS)):
        value = getattr(spec.lockstep, name)
        if value < minimum:
            raise SpecError(f"must be >= {minimum}, got {value}", f"lockstep.{name}")
        check_at_most(value, most, f"lockstep.{name}")
    if not is_envruntime_command(spec.command) and not _passes_control(spec.command):
        raise SpecError("order: lockstep hands the bench its control FIFO as {control}; the command never "
                        "passes it (add e.g. \"--control\", \"{control}\")", "command")


def check_quiet(spec: SweepSpec) -> None:
    """``quiet`` limits in range: ``max_load`` >= 0, ``max_steal`` in [0, 1], ``max_wait_s`` > 0."""
    if spec.quiet is None:
        return
    quiet = spec.quiet
    for name, in_range, expected in (("max_load", quiet.max_load >= 0, ">= 0 (busy CPUs)"),
                                     ("max_steal", 0 <= quiet.max_steal <= 1, "in [0, 1] (a share)"),
                                     ("max_wait_s", quiet.max_wait_s > 0, "> 0 (seconds)")):
        value = getattr(quiet, name)
        if not (math.isfinite(value) and in_range):
            raise SpecError(f"must be a number {expected}, got {value}", f"quiet.{name}")


def _passes_control(command: list[str]) -> bool:
    return any("control" in placeholders_in(arg, f"command[{i}]") for i, arg in enumerate(command))
