"""The bench command and what runs beside it: the command's placeholders, the argv of a run, the
params a command takes (envruntime's typed ones for its default command, free-form placeholders for
any other), ``prepare`` and ``audit_modules``.

envruntime's params keys and their checks apply to envruntime's default command only
(``is_envruntime_command``); any other command gets free-form params, every key a placeholder.
"""

from __future__ import annotations

import re
import string
from dataclasses import asdict
from typing import Any

from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from orchestrator.capabilities import Capability, describe
from orchestrator.errors import SpecError
from orchestrator.spec.case_names import case_parts
from orchestrator.spec.schema import (
    BUILTIN_PLACEHOLDERS,
    CASE_PLACEHOLDERS,
    DEFAULT_COMMAND,
    ENVRUNTIME_KNOWN,
    ENVRUNTIME_OPTIONAL,
    PREPARE_PLACEHOLDERS,
    KnownNames,
    Order,
    ParamsSpec,
    Protocol,
    SweepSpec,
)

PARAM_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
MODULE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*\Z")


def is_envruntime_command(command: list[str] | tuple[str, ...]) -> bool:
    """Whether ``command`` is envruntime's default bench command (its keys and checks apply)."""
    return list(command) == list(DEFAULT_COMMAND)


def passes_variant(command: list[str] | tuple[str, ...]) -> bool:
    """Whether ``command`` gives the bench the sweep's ``variant`` (``{variant}``): only then does a
    run have a variant (its row a ``variant`` column), and a plan, a report or a history speak of it."""
    try:
        return any("variant" in placeholders_in(str(arg), "command") for arg in command)
    except SpecError:  # a stored command of an older sweep: its placeholders were checked then
        return False


def normalized_params(params: dict[str, Any] | ParamsSpec, command: list[str], key: str) -> dict[str, Any]:
    """envruntime's command: ``params`` over ``ParamsSpec`` (its keys only, its defaults filled in);
    any other command: ``params`` as written, each a scalar under a placeholder-able name."""
    if isinstance(params, ParamsSpec):
        params = asdict(params)
    if is_envruntime_command(command):
        try:
            merged = OmegaConf.merge(OmegaConf.structured(ParamsSpec), OmegaConf.create(dict(params)))
            typed: ParamsSpec = OmegaConf.to_object(merged)  # type: ignore[assignment]
        except OmegaConfBaseException as exc:
            full = ".".join(k for k in (key, getattr(exc, "full_key", "") or "") if k)
            raise SpecError(str(getattr(exc, "msg", exc)).splitlines()[0], full) from None
        return {name: value for name, value in asdict(typed).items()
                if not (name in ENVRUNTIME_OPTIONAL and value is None)}  # unset: not in the run key
    for name, value in params.items():
        if not PARAM_NAME.match(str(name)):
            raise SpecError(f"{name!r} must be letters, digits and '_' (it is the placeholder {{{name}}})",
                            f"{key}.{name}")
        if name in BUILTIN_PLACEHOLDERS[:-1] or name in CASE_PLACEHOLDERS:  # threads is a param
            raise SpecError(f"{{{name}}} is a built-in placeholder; choose another name", f"{key}.{name}")
        if not isinstance(value, bool | int | float | str):
            raise SpecError(f"must be a number, a string or a bool, got {value!r}", f"{key}.{name}")
    return dict(params)


def bench_argv(command: list[str] | tuple[str, ...], params: dict[str, Any], lockstep: bool = False
               ) -> tuple[str, ...]:
    """The argv template of a run: ``command``, and for envruntime's default command the optional
    options its params set (``--actions {actions}``, ``--device {device}``) and, in a lockstep sweep,
    ``--control {control}``, before ``--stream``."""
    if not is_envruntime_command(command):
        return tuple(command)
    extra = [arg for name in ENVRUNTIME_OPTIONAL if name in params
             for arg in (f"--{name}", f"{{{name}}}")]
    extra += ["--control", "{control}"] if lockstep else []
    stream = list(command).index("--stream")
    return (*command[:stream], *extra, *command[stream:])


def placeholders_in(arg: str, key: str) -> list[str]:
    """The ``{name}`` placeholders in one argv element (``{{`` and ``}}`` are literal braces)."""
    try:
        parsed = [(name, fmt, conv) for _, name, fmt, conv in string.Formatter().parse(arg)
                  if name is not None]
    except ValueError as exc:
        raise SpecError(f"malformed placeholder in {arg!r}: {exc} (write {{{{ and }}}} for a literal brace)",
                        key) from None
    for name, fmt, conv in parsed:
        if fmt or conv:
            raise SpecError(f"placeholder {{{name}}} in {arg!r} takes no format spec or conversion", key)
    return [name for name, _, _ in parsed]


def check_command(spec: SweepSpec, params_by_side: dict[str, dict[str, Any]]) -> None:
    """Every placeholder of ``command`` is provided on every side; a json command writes ``{result}``."""
    unshaped = next(((i, c) for i, c in enumerate(spec.cases) if case_parts(c) is None), None)
    used: set[str] = set()
    for i, arg in enumerate(spec.command):
        key = f"command[{i}]"
        for name in placeholders_in(arg, key):
            used.add(name)
            if name in CASE_PLACEHOLDERS:
                if unshaped is not None:
                    raise SpecError(f"{{{name}}} in {arg!r} needs every case of the form algo/task/sim; "
                                    f"cases[{unshaped[0]}] {unshaped[1]!r} is not", key)
                continue
            if name in BUILTIN_PLACEHOLDERS:
                continue
            if name == "control":
                if spec.order is not Order.lockstep:
                    raise SpecError(f"{{control}} in {arg!r} is lockstep's control FIFO; only an "
                                    "order: lockstep sweep passes it", key)
                continue
            for side, params in params_by_side.items():
                if name not in params:
                    where = "" if len(params_by_side) == 1 else f" on side {side!r}"
                    raise SpecError(f"unknown placeholder {{{name}}} in {arg!r}: no param provides it{where} "
                                    f"(set params.{name}, or use one of "
                                    + ", ".join(f"{{{p}}}" for p in BUILTIN_PLACEHOLDERS + CASE_PLACEHOLDERS)
                                    + ")", key)
    info = describe(spec.protocol.value)
    in_process = spec.order is Order.lockstep and info.suite_driver is not None  # read from the channel
    if info.has(Capability.RESULT_DOCUMENT) and "result" not in used and not in_process:
        raise SpecError(f"protocol {spec.protocol.value} reads the document the bench writes to {{result}}, "
                        "but the command never passes {result} to it", "command")


def check_prepare(prepare: list[list[str]]) -> None:
    for i, argv in enumerate(prepare):
        if not argv:
            raise SpecError("must be a non-empty argv list, e.g. [uv, sync]", f"prepare[{i}]")
        for j, arg in enumerate(argv):
            key = f"prepare[{i}][{j}]"
            for name in placeholders_in(arg, key):
                if name not in PREPARE_PLACEHOLDERS:
                    raise SpecError(f"placeholder {{{name}}} in {arg!r}: prepare runs once per SHA and takes "
                                    "only " + ", ".join(f"{{{p}}}" for p in PREPARE_PLACEHOLDERS), key)


def check_audit_modules(modules: list[str] | None) -> None:
    if modules is None:
        return
    for i, name in enumerate(modules):
        if not isinstance(name, str) or not MODULE_NAME.match(name):
            raise SpecError(f"{name!r} is not a module name like mypkg.core", f"audit_modules[{i}]")
    if len(set(modules)) != len(modules):
        raise SpecError("modules must not repeat", "audit_modules")


def check_generic_params(params: dict[str, Any], protocol: Protocol) -> list[tuple[str, str]]:
    """(key, problem) for the params the orchestrator itself reads: ``threads``, and ``warmup`` and
    ``measure`` where the worker runs the steps itself (protocol time)."""
    counts = {"threads": 0}
    if describe(protocol.value).has(Capability.MEASURE_PARAM):
        counts |= {"warmup": 0, "measure": 1}
    problems = []
    for name, minimum in counts.items():
        if name in params:
            value = params[name]
            if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
                problems.append((f"params.{name}", f"must be an integer >= {minimum}, got {value!r}"))
    return problems


def effective_known(spec: SweepSpec) -> KnownNames:
    """``known`` with unset lists filled: envruntime's names for its command, no check otherwise."""
    fallback = ENVRUNTIME_KNOWN if is_envruntime_command(spec.command) else KnownNames([], [], [], [])
    names = ("algos", "tasks", "sims", "variants")
    return KnownNames(**{name: getattr(spec.known, name) if getattr(spec.known, name) is not None
                         else list(getattr(fallback, name)) for name in names})
