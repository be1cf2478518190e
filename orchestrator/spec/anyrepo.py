"""The spec checks for benchmarking any repository: free-form params and cases, the command's
placeholders, ``protocol`` with its ``json`` block, ``audit_modules`` and ``prepare``.

envruntime's names, params keys and their checks apply to envruntime's default command only
(``is_envruntime_command``); any other command gets free-form params (every key a placeholder) and
free-form case names (``algo/task/sim`` ones also give ``{algo} {task} {sim}``).
"""

from __future__ import annotations

import difflib
import re
import string
from collections.abc import Iterable
from dataclasses import asdict
from typing import Any

from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from orchestrator.capabilities import Capability, ProtocolInfo, describe
from orchestrator.errors import SpecError
from orchestrator.spec.schema import (
    BUILTIN_PLACEHOLDERS,
    CASE_PLACEHOLDERS,
    DEFAULT_COMMAND,
    ENVRUNTIME_KNOWN,
    ENVRUNTIME_OPTIONAL,
    PREPARE_PLACEHOLDERS,
    REPORT_METRICS,
    Case,
    KnownNames,
    Order,
    ParamsSpec,
    Protocol,
    SweepSpec,
)

_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*\Z")
PARAM_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
MODULE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*\Z")
_DOTTED_PATH = re.compile(r"[^.\s]+(\.[^.\s]+)*\Z")
_METRIC = re.compile(r"(throughput|[A-Za-z0-9_.]+_ms)\Z")  # a name a v1 bench may report
# Run columns a ``json.metrics`` name must not take (the store writes these itself).
RESERVED_COLUMNS: frozenset[str] = frozenset((
    "sweep_id", "run_key", "side", "ref", "sha", "case", "algo", "task", "sim", "variant", "repeat", "order",
    "status", "error", "started_at", "ended_at", "wall_s", "throughput", "measure_wall_s", "exit_code",
    "steps", "log_dir", "params", "env", "protocol", "sweep", "ran_in", "lockstep_fallback", "blocks",
    "quiet_wait_s", "quiet_load", "quiet_steal", "quiet_met",
))


def is_envruntime_command(command: list[str] | tuple[str, ...]) -> bool:
    """Whether ``command`` is envruntime's default bench command (its keys and checks apply)."""
    return list(command) == list(DEFAULT_COMMAND)


def passes_variant(command: list[str] | tuple[str, ...]) -> bool:
    """Whether ``command`` gives the bench the sweep's ``variant`` (``{variant}``): only then does a
    plan, a report or a history speak of variants."""
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


def is_suite(spec: SweepSpec) -> bool:
    """Whether one run of the sweep's protocol measures many cases (a benchmark suite): its ``cases``
    are names and globs of what the output holds, read from one run per side and round."""
    return describe(spec.protocol.value).has(Capability.MANY_CASES)


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


def case_parts(text: str) -> Case | None:
    """The parts of ``algo/task/sim``; None for a case of any other shape."""
    parts = text.split("/")
    if len(parts) == 3 and all(_LABEL.match(p) for p in parts):
        return Case(*parts)
    return None


def check_case_name(text: str, key: str) -> None:
    """Any non-empty name on one line."""
    if not text.strip() or text != text.strip() or any(ord(c) < 32 for c in text):
        raise SpecError(f"{text!r} is not a case name (non-empty, one line, no surrounding spaces)", key)


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
    if describe(spec.protocol.value).has(Capability.RESULT_DOCUMENT) and "result" not in used:
        raise SpecError(f"protocol {spec.protocol.value} reads the document the bench writes to {{result}}, "
                        "but the command never passes {result} to it", "command")


def check_protocol(spec: SweepSpec) -> None:
    """``json`` given exactly for a protocol that maps a result document (json), with valid paths and
    names."""
    if not describe(spec.protocol.value).has(Capability.JSON_MAPPING):
        if spec.json is not None:
            raise SpecError(f"a json block maps a protocol json document; this sweep's protocol is "
                            f"{spec.protocol.value}", "json")
        return
    if spec.json is None:
        raise SpecError(f"protocol {spec.protocol.value} needs a json block: {{throughput: <dotted path>, "
                        "phases: {...}}", "json")
    paths = {} if spec.json.throughput is None else {"json.throughput": spec.json.throughput}
    paths |= {f"json.phases.{name}": path for name, path in spec.json.phases.items()}
    paths |= {f"json.metrics.{name}": path for name, path in spec.json.metrics.items()}
    if spec.json.versions is not None:
        paths["json.versions"] = spec.json.versions
    if spec.json.measure_wall_s is not None:
        paths["json.measure_wall_s"] = spec.json.measure_wall_s
    for key, path in paths.items():
        if not isinstance(path, str) or not _DOTTED_PATH.match(path):
            raise SpecError(f"{path!r} is not a dotted path like results.0.mean_ms", key)
    for name in spec.json.phases:
        if not PARAM_NAME.match(name.replace(".", "_")) or not name.endswith("_ms"):
            raise SpecError(f"phase name {name!r} must end in '_ms' (letters, digits, '_', '.')",
                            f"json.phases.{name}")
    for name in spec.json.metrics:
        if not PARAM_NAME.match(name) or name in RESERVED_COLUMNS or name.endswith("_ms") \
                or name.startswith(("host_", "audit_")):
            raise SpecError(f"metric name {name!r} must be letters, digits, '_', not end in '_ms' (a phase), "
                            "not start with host_ or audit_, and not be a run column", f"json.metrics.{name}")


def check_audit_modules(modules: list[str] | None) -> None:
    if modules is None:
        return
    for i, name in enumerate(modules):
        if not isinstance(name, str) or not MODULE_NAME.match(name):
            raise SpecError(f"{name!r} is not a module name like mypkg.core", f"audit_modules[{i}]")
    if len(set(modules)) != len(modules):
        raise SpecError("modules must not repeat", "audit_modules")


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


def protocol_info(spec: SweepSpec) -> ProtocolInfo:
    """The sweep's protocol under its ``json`` mapping: what its runs report (``provides``: None where
    only the bench knows, until its first ok run)."""
    return describe(spec.protocol.value, vars(spec.json) if spec.json is not None else {})


def check_metric(metric: str, key: str, info: ProtocolInfo) -> None:
    """``SpecError`` naming ``key`` unless ``metric`` is one the protocol provides (with the valid names
    and the nearest one); where only the bench knows its metrics, unless it is ``throughput``, a phase
    name (``*_ms``) or a metric the protocol declares."""
    provided = info.provides
    if provided is None:
        if not _METRIC.match(metric) and metric not in (info.metrics or ()):
            raise SpecError(f"metric {metric!r} must be 'throughput' or a phase name ending in '_ms'", key)
        return
    if metric not in provided:
        valid = ", ".join(sorted(provided)) or "none"
        raise SpecError(f"metric {metric!r} is not reported by protocol {info.name} under this sweep's "
                        f"settings; valid: {valid}{did_you_mean(metric, provided)}", key)


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the known name nearest ``name``, or nothing."""
    near = difflib.get_close_matches(name, sorted(known), n=1)
    return f" (did you mean {near[0]!r}?)" if near else ""


def check_json_judged(spec: SweepSpec) -> None:
    """A json mapping must give the report something to judge: ``throughput``, or a phase or metric a
    gate checks."""
    if spec.json is None or spec.json.throughput is not None:
        return
    mapped = {*spec.json.phases, *spec.json.metrics}
    if not any(gate.metric in mapped for gate in spec.gates):
        names = ", ".join(sorted(mapped)) or "none mapped"
        raise SpecError("maps no throughput and no phase or metric a gate checks, so nothing would be "
                        f"judged; map json.throughput, or gate one of: {names}", "json")


def default_metrics(spec: SweepSpec) -> list[str] | None:
    """The report rows of a sweep that lists none: envruntime's for its command; None (the phases
    and metrics its runs report, found at report time) for any other."""
    return list(REPORT_METRICS) if is_envruntime_command(spec.command) else None
