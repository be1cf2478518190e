"""Sweep spec loading: the YAML merged with CLI overrides over the typed schema, then validated.

``load_spec(path, dotlist)`` merges the YAML and the CLI dotlist over the typed defaults and checks
everything that needs neither git nor the filesystem (``refs.resolve_sweep`` does the rest). Every
problem raises ``SpecError`` naming the offending key, e.g. ``params.num_envs: must be > 0, got 0``.
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

import yaml
from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from orchestrator.capabilities import DISCOVER, SUITE_CASE, ProtocolInfo, case_matches, unknown_protocol
from orchestrator.errors import SpecError
from orchestrator.spec import case_names, commands, interpreters, protocol_checks
from orchestrator.spec.bounds import (
    MAX_LABEL_LENGTH,
    MAX_NAME_LENGTH,
    MAX_REF_LENGTH,
    MAX_REPEATS,
    MAX_RUNS,
    check_at_most,
    check_finite_floats,
    check_length,
)
from orchestrator.spec.commands import placeholders_in
from orchestrator.spec.deprecated import drop_deprecated
from orchestrator.spec.instrument_checks import check_instrument
from orchestrator.spec.order_checks import check_lockstep, check_quiet
from orchestrator.spec.overrides import apply_removals, plain_overrides
from orchestrator.spec.schema import (
    ENVRUNTIME_OPTIONAL,
    EQUIVALENCE_PASS_SHARE,
    HOSTS_CHOICES,
    Case,
    GateSpec,
    KnownNames,
    RunSettings,
    SweepSpec,
    WaiverSpec,
)

__all__ = ["load_spec", "spec_from_config", "revalidated", "side_settings", "parse_case", "placeholders_in",
           "validate"]

_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*\Z")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def load_spec(path: str | Path, dotlist: list[str] | tuple[str, ...] = ()) -> SweepSpec:
    """Load the sweep YAML at ``path``, apply ``dotlist`` overrides, and validate the result."""
    return spec_from_config(read_yaml(Path(path)), dotlist, Path(path).resolve().parent)


def spec_from_config(raw: DictConfig, dotlist: list[str] | tuple[str, ...] = (), base: Path | None = None
                     ) -> SweepSpec:
    """Merge ``raw`` (a loaded YAML) and ``dotlist`` over the typed defaults and validate the result;
    relative ``python`` paths are taken from ``base`` (the sweep file's directory; default: here)."""
    refuse_env_lookups(raw, "the sweep file")
    _refuse_numeric_refs(raw)
    dotlist = drop_deprecated(raw, apply_removals(raw, dotlist))
    raw, dotlist = _discover_as_glob(raw, dotlist)
    for name, schema in (("gates", GateSpec), ("waivers", WaiverSpec)):
        items = raw.get(name)
        if isinstance(items, ListConfig):  # omegaconf drops the list index from errors inside list items
            for i, item in enumerate(items):
                _typed_merge(schema, item, prefix=f"{name}[{i}]")
    if dotlist:
        dotlist = plain_overrides(_untyped_base(raw), dotlist)
    merged = _typed_merge(SweepSpec, raw, _parse_dotlist(dotlist, "override"), prefix="")
    spec: SweepSpec = OmegaConf.to_object(merged)  # type: ignore[assignment]
    _resolve_pythons(spec, base or Path.cwd())
    validate(spec)
    return spec


def _resolve_pythons(spec: SweepSpec, base: Path) -> None:
    """Each ``python`` key as the absolute path of its interpreter (``spec.interpreters``)."""
    if spec.python is not None:
        spec.python = interpreters.resolve_python(spec.python, "python", base)
    for label, side in spec.sides.items():
        if side.python is not None:
            side.python = interpreters.resolve_python(side.python, f"sides.{label}.python", base)


def _refuse_numeric_refs(raw: DictConfig) -> None:
    """A side's ``ref`` that YAML read as a number (``ref: 5e51197`` is infinity, ``ref: 0123456`` octal)
    is a ``SpecError`` asking for quotes: its text as written is gone."""
    sides = raw.get("sides")
    if not isinstance(sides, DictConfig):
        return
    for label, side in sides.items():
        ref = side.get("ref") if isinstance(side, DictConfig) else None
        if isinstance(ref, (int, float)):  # bool included
            raise SpecError(f"YAML read this ref as the number {ref!r}; write it in quotes, "
                            "e.g. ref: '5e51197'", f"sides.{label}.ref")


def _discover_as_glob(raw: DictConfig, dotlist: list[str] | tuple[str, ...]) -> tuple[DictConfig, list[str]]:
    """``cases: discover`` (or the override ``cases=discover``) is ``cases: ['*']``: every benchmark
    of a suite's output."""
    if raw.get("cases") == "discover":
        raw = OmegaConf.merge(raw, {"cases": [DISCOVER]})  # type: ignore[assignment]
    return raw, [f"cases=['{DISCOVER}']" if item.replace(" ", "") == "cases=discover" else item
                 for item in dotlist]


def revalidated(spec: SweepSpec) -> SweepSpec:
    """A validated copy of a recorded ``spec`` (``spec.record.spec_from_json`` types it without the
    checks), before anything it says runs again."""
    checked = copy.deepcopy(spec)
    validate(checked)
    return checked


def side_settings(spec: SweepSpec, label: str) -> RunSettings:
    """The variant, params and env of side ``label``: the sweep's values with the side's overrides."""
    side = spec.sides[label]
    key = f"sides.{label}.overrides"
    base = RunSettings(variant=spec.variant, params=spec.params, env=dict(spec.env))
    dotlist = _parse_dotlist(side.overrides, key)
    try:
        merged = _typed_merge(RunSettings, OmegaConf.structured(base), dotlist, prefix="")
    except SpecError as exc:
        raise SpecError(f"{exc} (a side may override only variant, params.* and env.*)", key) from None
    settings: RunSettings = OmegaConf.to_object(merged)  # type: ignore[assignment]
    try:
        settings.params = commands.normalized_params(settings.params, spec.command, "params")
    except SpecError as exc:
        raise SpecError(f"{exc}", key) from None
    _check_run_settings(settings, spec, key)
    return settings


def parse_case(text: str, known: KnownNames, key: str, *, shaped: bool = True) -> Case | None:
    """The parts of case ``text``, each known when the corresponding ``known`` list is non-empty.

    ``shaped``: the case must be ``algo/task/sim`` (envruntime's command); otherwise any non-empty
    name is a case, and only one of that shape has parts (else None).
    """
    if not shaped:
        case_names.check_case_name(text, key)
    case = case_names.case_parts(text)
    if case is None:
        if not shaped:
            return None
        raise SpecError(f"{text!r} is not a case of the form algo/task/sim", key)
    for kind, value, allowed in (("algo", case.algo, known.algos), ("task", case.task, known.tasks),
                                 ("sim", case.sim, known.sims)):
        if allowed and value not in allowed:
            raise SpecError(f"unknown {kind} {value!r} in {text!r}; known: {', '.join(allowed)} "
                            f"(set known.{kind}s to change the list)", key)
    return case


def validate(spec: SweepSpec) -> None:
    """Semantic checks the schema cannot express (labels, counts, cases, gates, command, caps); fills
    in envruntime's params defaults and report metrics for its default command."""
    check_finite_floats(spec)
    protocol_checks.check_registered(spec)
    _check_sizes(spec)
    spec.params = commands.normalized_params(spec.params, spec.command, "params")
    if spec.metrics is None:
        spec.metrics = protocol_checks.default_metrics(spec)
    if not _LABEL.match(spec.name):
        raise SpecError(f"{spec.name!r} must be letters, digits, '_', '.', '-' (it names files)", "name")
    if not spec.sides:
        raise SpecError("at least one side is required, e.g. sides: {a: {ref: HEAD}}", "sides")
    for label in spec.sides:
        if not _LABEL.match(label):
            raise SpecError(f"side label {label!r} must be letters, digits, '_', '.', '-'", f"sides.{label}")
        if not spec.sides[label].ref.strip():
            raise SpecError("must name a git ref", f"sides.{label}.ref")
        if spec.sides[label].python is not None:
            interpreters.check_python(spec.sides[label].python, f"sides.{label}.python")
    if spec.python is not None:
        interpreters.check_python(spec.python, "python")
    if spec.baseline not in spec.sides:
        raise SpecError(f"{spec.baseline!r} is not a side; sides: {', '.join(spec.sides)}", "baseline")
    if not spec.cases:
        raise SpecError("at least one case (algo/task/sim) is required", "cases")
    known, shaped = commands.effective_known(spec), commands.is_envruntime_command(spec.command)
    if not protocol_checks.is_suite(spec):
        for i, text in enumerate(spec.cases):
            parse_case(text, known, f"cases[{i}]", shaped=shaped)
            if case_matches(SUITE_CASE, text):
                raise SpecError(f"{text!r} names the suite run's own case {SUITE_CASE!r}", f"cases[{i}]")
    else:
        for i, text in enumerate(spec.cases):
            case_names.check_case_name(text, f"cases[{i}]")
    if len(set(spec.cases)) != len(spec.cases):
        raise SpecError("cases must not repeat (use repeats for more runs)", "cases")
    _check_positive(spec.repeats, "repeats")
    if spec.max_repeats is not None and spec.max_repeats < spec.repeats:
        raise SpecError(f"must be >= repeats ({spec.repeats}), got {spec.max_repeats}", "max_repeats")
    if spec.budget_s is not None:
        _check_positive(spec.budget_s, "budget_s")
    _check_positive(spec.timeout_s, "timeout_s")
    if spec.max_steps is not None:
        _check_positive(spec.max_steps, "max_steps")
    if spec.max_result_mib is not None:
        _check_positive(spec.max_result_mib, "max_result_mib")
    _check_positive(spec.drift_threshold, "drift_threshold")
    _check_run_settings(RunSettings(spec.variant, spec.params, spec.env), spec, None)
    if not spec.command:
        raise SpecError("must be a non-empty argv list", "command")
    protocol_checks.check_protocol(spec)
    commands.check_audit_modules(spec.audit_modules)
    commands.check_prepare(spec.prepare)
    _check_pythonpath(spec.pythonpath)
    _check_hosts(spec.hosts)
    check_lockstep(spec)
    check_quiet(spec)
    check_instrument(spec)
    info = protocol_checks.protocol_info(spec)  # what the protocol can do is checked: now what it reports
    for i, gate in enumerate(spec.gates):
        _check_gate(gate, spec, f"gates[{i}]", info)
    if spec.metrics is not None:
        _check_metrics(spec.metrics, info)
    protocol_checks.check_json_judged(spec)
    for i, waiver in enumerate(spec.waivers):
        check_waiver(waiver, spec, f"waivers[{i}]")
    commands.check_command(spec, {label: side_settings(spec, label).params for label in spec.sides})


def _check_sizes(spec: SweepSpec) -> None:
    """Lengths and counts within the caps of ``orchestrator.spec.bounds``, before anything is expanded."""
    check_length(spec.name, MAX_NAME_LENGTH, "name")
    for label, side in spec.sides.items():
        check_length(label, MAX_LABEL_LENGTH, f"sides.{label[:MAX_LABEL_LENGTH]}")
        check_length(side.ref, MAX_REF_LENGTH, f"sides.{label}.ref")
    for i, case in enumerate(spec.cases):
        check_length(case, 3 * MAX_LABEL_LENGTH + 2, f"cases[{i}]")
    check_at_most(spec.repeats, MAX_REPEATS, "repeats")
    if spec.max_repeats is not None:
        check_at_most(spec.max_repeats, MAX_REPEATS, "max_repeats")
    runs = len(spec.cases) * len(spec.sides) * max(spec.repeats, 0)
    if runs > MAX_RUNS:
        raise SpecError(f"{len(spec.cases)} cases x {len(spec.sides)} sides x {spec.repeats} repeats = "
                        f"{runs:,} runs; at most {MAX_RUNS:,}", "repeats")


def refuse_env_lookups(config: DictConfig | ListConfig, source: str) -> None:
    """``${oc.env:...}`` would copy the client's environment into records and Parquet: refused."""
    raw = OmegaConf.to_container(config, resolve=False)
    for key, text in _strings(raw, ""):
        if "${" in text and "oc.env" in text:
            raise SpecError(f"{text!r}: a sweep may not read the client's environment (${{oc.env:...}} in "
                            f"{source}); write the value itself", key or None)


def _strings(value: object, key: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield key, value
    elif isinstance(value, dict):
        for name, item in value.items():
            yield from _strings(item, f"{key}.{name}" if key else str(name))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _strings(item, f"{key}[{i}]")


def check_waiver(waiver: WaiverSpec, spec: SweepSpec, key: str | None) -> None:
    """``SpecError`` (naming ``key``) unless ``waiver`` names gate verdicts the sweep has: one of its
    cases, a non-baseline side, an existing gate that checks that case and side; and gives a reason."""
    if not waiver.reason.strip():
        raise SpecError("a waiver needs a reason", key)
    if waiver.case not in spec.cases and not protocol_checks.is_suite(spec):  # a suite's: known once it ran
        raise SpecError(f"case {waiver.case!r} is not one of the sweep's cases: {', '.join(spec.cases)}", key)
    candidates = [s for s in spec.sides if s != spec.baseline]
    if waiver.side is not None and waiver.side not in candidates:
        raise SpecError(f"side {waiver.side!r} has no gate verdicts; the sides compared to the baseline "
                        f"{spec.baseline!r}: {', '.join(candidates)}", key)
    if not spec.gates:
        raise SpecError("the sweep has no gates to waive", key)
    if waiver.gate is not None and not 0 <= waiver.gate < len(spec.gates):
        raise SpecError(f"gate {waiver.gate} does not exist; the sweep's gates are 0..{len(spec.gates) - 1}",
                        key)
    gates = [spec.gates[waiver.gate]] if waiver.gate is not None else spec.gates
    sides = [waiver.side] if waiver.side is not None else candidates
    if not any((g.case is None or case_matches(waiver.case, g.case)) and g.side in (None, *sides)
               for g in gates):
        which = f"gate {waiver.gate} does not check" if waiver.gate is not None else "no gate checks"
        raise SpecError(f"{which} case {waiver.case!r} on side {' or '.join(map(repr, sides))}", key)


def _check_run_settings(settings: RunSettings, spec: SweepSpec, where: str | None) -> None:
    """Check variant, params and env; ``where`` names the side overrides they came from, if any."""
    known = commands.effective_known(spec)
    if known.variants and settings.variant not in known.variants:
        _fail("variant", f"unknown variant {settings.variant!r}; known: {', '.join(known.variants)}", where)
    p = settings.params
    if commands.is_envruntime_command(spec.command):
        for name in ("num_envs", "measure", "replay_capacity"):
            if p[name] <= 0:
                _fail(f"params.{name}", f"must be > 0, got {p[name]}", where)
        for name in ("warmup", "seed", "threads"):
            if p[name] < 0:
                _fail(f"params.{name}", f"must be >= 0, got {p[name]}", where)
        for name, valid in ENVRUNTIME_OPTIONAL.items():
            if name in p and p[name] not in valid:
                _fail(f"params.{name}", f"unknown {name} {p[name]!r}; valid: {', '.join(valid)}", where)
    for key, problem in commands.check_generic_params(p, spec.protocol):
        _fail(key, problem, where)
    for name, value in settings.env.items():
        if not _ENV_NAME.match(name):
            _fail(f"env.{name}", f"{name!r} is not a valid environment variable name", where)
        if not isinstance(value, str):
            _fail(f"env.{name}", f"must be a string, got {value!r}", where)
        if "\0" in value or "\n" in value or "\r" in value:
            _fail(f"env.{name}", f"must not hold a NUL byte or a line break, got {value!r}", where)


def _fail(key: str, message: str, where: str | None) -> None:
    """Raise for ``key``; when the value came from side overrides, name those and mention ``key``."""
    raise SpecError(f"{key}: {message}", where) if where else SpecError(message, key)


def _check_metrics(metrics: list[str], info: ProtocolInfo) -> None:
    if not metrics:
        raise SpecError("at least one metric is required, e.g. [throughput, physics_ms]", "metrics")
    for i, metric in enumerate(metrics):
        protocol_checks.check_metric(metric, f"metrics[{i}]", info)
    if len(set(metrics)) != len(metrics):
        raise SpecError("metrics must not repeat", "metrics")


def _check_gate(gate: GateSpec, spec: SweepSpec, key: str, info: ProtocolInfo) -> None:
    protocol_checks.check_metric(gate.metric, f"{key}.metric", info)
    _check_gate_bounds(gate, key)
    if not 0 < gate.confidence < 1:
        raise SpecError(f"must lie strictly between 0 and 1 (e.g. 0.95), got {gate.confidence}",
                        f"{key}.confidence")
    if gate.within is not None and 2 * EQUIVALENCE_PASS_SHARE * (1 - gate.confidence) >= 1:
        raise SpecError(f"a within gate's PASS reads an interval at 1 - {2 * EQUIVALENCE_PASS_SHARE:g} x "
                        f"(1 - confidence): needs a confidence above {1 - 0.5 / EQUIVALENCE_PASS_SHARE:.3g}, "
                        f"got {gate.confidence}", f"{key}.confidence")
    if gate.case is not None and gate.case not in spec.cases and not protocol_checks.is_suite(spec):
        raise SpecError(f"{gate.case!r} is not one of the sweep's cases", f"{key}.case")
    if gate.side is not None and gate.side not in spec.sides:
        raise SpecError(f"{gate.side!r} is not a side; sides: {', '.join(spec.sides)}", f"{key}.side")
    if gate.side == spec.baseline:
        raise SpecError(f"{gate.side!r} is the baseline; a gate compares another side to it", f"{key}.side")


def _check_gate_bounds(gate: GateSpec, key: str) -> None:
    """A gate has ``within`` alone, or ``min_ratio`` and/or ``max_ratio``, each in its range."""
    if gate.within is not None:
        if gate.min_ratio is not None or gate.max_ratio is not None:
            raise SpecError("an equivalence gate has within alone: give within or min_ratio/max_ratio, "
                            "not both", f"{key}.within")
        if not 0 < gate.within < 1:
            raise SpecError(f"must lie strictly between 0 and 1 (0.03: within 3% either way), "
                            f"got {gate.within}", f"{key}.within")
        return
    if gate.min_ratio is None and gate.max_ratio is None:
        raise SpecError("needs min_ratio (higher is better), max_ratio (lower is better) or within "
                        "(no change either way)", key)
    for bound in ("min_ratio", "max_ratio"):
        value = getattr(gate, bound)
        if value is not None and value <= 0:
            raise SpecError(f"must be > 0, got {value}", f"{key}.{bound}")


def _check_pythonpath(dirs: list[str]) -> None:
    """Each entry a directory inside the worktree: relative, no ``..``, no path separator list."""
    if not dirs:
        raise SpecError("at least one directory is required, e.g. [.] or [src]", "pythonpath")
    for i, text in enumerate(dirs):
        key = f"pythonpath[{i}]"
        path = PurePosixPath(text)
        if not text.strip() or path.is_absolute() or ".." in path.parts or os.pathsep in text:
            raise SpecError(f"{text!r} must be a directory relative to the worktree, e.g. src "
                            f"(not absolute, no '..', no {os.pathsep!r})", key)
    if len({PurePosixPath(d) for d in dirs}) != len(dirs):
        raise SpecError("directories must not repeat", "pythonpath")


def _check_hosts(hosts: object) -> None:
    """``one``, ``all`` or a non-empty list of distinct host ids (whether they are connected is checked
    when the sweep connects)."""
    if isinstance(hosts, str) and hosts in HOSTS_CHOICES:
        return
    if not isinstance(hosts, list) or not hosts:
        raise SpecError(f"must be one, all or a list of host ids, got {hosts!r}", "hosts")
    for i, host in enumerate(hosts):
        if not isinstance(host, str) or not _LABEL.match(host):
            raise SpecError(f"{host!r} is not a host id (letters, digits, '_', '.', '-')", f"hosts[{i}]")
    if len(set(hosts)) != len(hosts):
        raise SpecError("host ids must not repeat", "hosts")


def _check_positive(value: float, key: str) -> None:
    if value <= 0:
        raise SpecError(f"must be > 0, got {value}", key)


def read_yaml(path: Path) -> DictConfig:
    try:
        loaded = OmegaConf.load(path)
    except FileNotFoundError:
        raise SpecError(f"sweep file {str(path)!r} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"cannot read sweep file {str(path)!r}: {exc}") from None
    except yaml.YAMLError as exc:
        raise SpecError(f"{path}: invalid YAML: {exc}") from None
    if not isinstance(loaded, DictConfig):
        raise SpecError(f"{path}: the sweep must be a YAML mapping of keys (name, sides, cases, ...)")
    return loaded


def _parse_dotlist(items: list[str] | tuple[str, ...], key: str) -> DictConfig:
    for i, item in enumerate(items):
        if not isinstance(item, str) or "=" not in item or not item.split("=", 1)[0].strip():
            raise SpecError(f"{item!r} is not of the form key=value", f"{key}[{i}]")
    try:
        parsed = OmegaConf.from_dotlist(list(items))
    except (OmegaConfBaseException, yaml.YAMLError, ValueError, TypeError) as exc:
        raise SpecError(f"cannot parse {list(items)}: {_first_line(exc)}", key) from None
    refuse_env_lookups(parsed, key)
    return parsed


def _untyped_base(raw: DictConfig) -> DictConfig:
    """The sweep's keys before overrides: the schema's defaults with the YAML over them (unchecked; the
    typed merge reports what is wrong with it)."""
    try:
        return OmegaConf.merge(OmegaConf.structured(SweepSpec), raw)
    except OmegaConfBaseException:
        return raw


def _typed_merge(schema: type | Any, *configs: DictConfig, prefix: str) -> DictConfig:
    """Merge ``configs`` over the structured ``schema``; omegaconf errors become ``SpecError``."""
    try:
        base = schema if isinstance(schema, DictConfig) else OmegaConf.structured(schema)
        merged = OmegaConf.merge(base, *configs)
        OmegaConf.to_object(merged)  # surfaces missing mandatory values and bad interpolations
    except (OmegaConfBaseException, TypeError) as exc:
        full_key = getattr(exc, "full_key", None) or ""
        key = ".".join(k for k in (prefix, full_key) if k) or None
        message = _first_line(exc)
        if key == "protocol":  # not a protocol name at all: say which names are
            message = str(unknown_protocol(getattr(exc, "value", None)))
        if isinstance(exc, TypeError):
            message = f"{message} (a list or mapping is overridden whole, e.g. cases=[a/b/c])"
        raise SpecError(message, key) from None
    return merged


def _first_line(exc: Exception) -> str:
    msg = getattr(exc, "msg", None) or str(exc)
    return str(msg).splitlines()[0] if msg else type(exc).__name__
