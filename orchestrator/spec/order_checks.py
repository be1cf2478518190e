"""The checks of ``order: lockstep`` and ``quiet:`` (docs/sweep-yaml.md), at load: exit 2 naming the key."""

from __future__ import annotations

import math

from orchestrator.capabilities import Capability, SuiteDriver, describe
from orchestrator.errors import SpecError
from orchestrator.spec.bounds import check_at_most
from orchestrator.spec.commands import is_envruntime_command, placeholders_in
from orchestrator.spec.schema import LockstepSpec, Order, SweepSpec

MAX_BLOCKS = 10_000  # measured blocks a side per round
MAX_BLOCK_STEPS = 1_000_000
MAX_STEP_MS = 60_000.0  # a suite's step: calibrated to at most a minute
# (blocks, block_steps) where the sweep names none: a suite's benchmarks, steps of ~step_ms, pair
# better in more, shorter blocks (docs/performance.md, "Shorter blocks for a suite's rounds")
BENCH_BLOCKS = (8, 5)
SUITE_BLOCKS = (16, 2)


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
    suite = info.has(Capability.MANY_CASES)  # a suite without the channel (gbench) runs its processes apart
    _fill_block_shape(spec.lockstep, SUITE_BLOCKS if suite else BENCH_BLOCKS)
    if not suite and not info.has(Capability.CONTROL_CHANNEL | Capability.STEPS):
        raise SpecError(f"lockstep needs a protocol whose bench reports steps and takes the control channel; "
                        f"protocol {spec.protocol.value} has no control channel (use v1)", "order")
    for name, minimum, most in (("blocks", 1, MAX_BLOCKS), ("block_steps", 1, MAX_BLOCK_STEPS),
                                ("block_warmup", 0, MAX_BLOCK_STEPS)):
        value = getattr(spec.lockstep, name)
        if value < minimum:
            raise SpecError(f"must be >= {minimum}, got {value}", f"lockstep.{name}")
        check_at_most(value, most, f"lockstep.{name}")
    if not (math.isfinite(spec.lockstep.step_ms) and 0 < spec.lockstep.step_ms <= MAX_STEP_MS):
        raise SpecError(f"must be a number of ms in (0, {MAX_STEP_MS:g}], got {spec.lockstep.step_ms}",
                        "lockstep.step_ms")
    if info.suite_driver is not None:
        _check_suite_command(spec, info.suite_driver)
    elif not suite and not is_envruntime_command(spec.command) and not _passes_control(spec.command):
        raise SpecError("order: lockstep hands the bench its control FIFO as {control}; the command never "
                        "passes it (add e.g. \"--control\", \"{control}\")", "command")


def _fill_block_shape(lockstep: LockstepSpec, shape: tuple[int, int]) -> None:
    """``blocks`` and ``block_steps`` the sweep left out, from the bench kind's ``shape``."""
    blocks, block_steps = shape
    if lockstep.blocks is None:
        lockstep.blocks = blocks
    if lockstep.block_steps is None:
        lockstep.block_steps = block_steps


def _check_suite_command(spec: SweepSpec, driver: SuiteDriver) -> None:
    """A suite's command as ``orchestrator.suitekit`` can run it in lockstep: a script's command starts
    with ``{python}`` (the shim runs the script), and leaves ``{control}`` to the plan."""
    if driver.after_python and (not spec.command or spec.command[0] != "{python}"):
        raise SpecError(f"order: lockstep runs a {spec.protocol.value} script in its own process through "
                        "shasweep's shim: the command must start with \"{python}\" (then the script or "
                        "-m module)", "command[0]")
    if _passes_control(spec.command):
        raise SpecError("a suite's command runs in lockstep as it is; the plan adds the control channel "
                        "itself: drop {control}", "command")


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
