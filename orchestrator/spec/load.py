"""Sweep spec loading: the YAML merged with CLI overrides over the typed schema, then validated.

``load_spec(path, dotlist)`` merges the YAML and the CLI dotlist over the typed defaults and checks
everything that needs neither git nor the filesystem (``refs.resolve_sweep`` does the rest). Every
problem raises ``SpecError`` naming the offending key, e.g. ``params.num_envs: must be > 0, got 0``.
"""

from __future__ import annotations

import re
import string
from pathlib import Path
from typing import Any

import yaml
from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from orchestrator.errors import SpecError
from orchestrator.spec.schema import (
    HOSTS_CHOICES,
    PLACEHOLDERS,
    Case,
    GateSpec,
    KnownNames,
    RunSettings,
    SweepSpec,
)

_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*\Z")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_METRIC = re.compile(r"(throughput|[A-Za-z0-9_.]+_ms)\Z")


def load_spec(path: str | Path, dotlist: list[str] | tuple[str, ...] = ()) -> SweepSpec:
    """Load the sweep YAML at ``path``, apply ``dotlist`` overrides, and validate the result."""
    return spec_from_config(_read_yaml(Path(path)), dotlist)


def spec_from_config(raw: DictConfig, dotlist: list[str] | tuple[str, ...] = ()) -> SweepSpec:
    """Merge ``raw`` (a loaded YAML, or ``OmegaConf.create(spec_to_dict(...))``) and ``dotlist`` over
    the typed defaults and validate the result."""
    gates = raw.get("gates")
    if isinstance(gates, ListConfig):  # omegaconf drops the list index from errors inside list items
        for i, gate in enumerate(gates):
            _typed_merge(GateSpec, gate, prefix=f"gates[{i}]")
    merged = _typed_merge(SweepSpec, raw, _parse_dotlist(dotlist, "override"), prefix="")
    spec: SweepSpec = OmegaConf.to_object(merged)  # type: ignore[assignment]
    validate(spec)
    return spec


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
    _check_run_settings(settings, spec.known, key)
    return settings


def parse_case(text: str, known: KnownNames, key: str) -> Case:
    """Parse ``algo/task/sim``; names must be known when the corresponding ``known`` list is non-empty."""
    parts = text.split("/")
    if len(parts) != 3 or not all(_LABEL.match(p) for p in parts):
        raise SpecError(f"{text!r} is not a case of the form algo/task/sim", key)
    case = Case(*parts)
    for kind, value, allowed in (("algo", case.algo, known.algos), ("task", case.task, known.tasks),
                                 ("sim", case.sim, known.sims)):
        if allowed and value not in allowed:
            raise SpecError(f"unknown {kind} {value!r} in {text!r}; known: {', '.join(allowed)} "
                            f"(set known.{kind}s to change the list)", key)
    return case


def placeholders_in(arg: str, key: str) -> list[str]:
    """The ``{name}`` placeholders in one argv element; unknown or malformed ones raise ``SpecError``."""
    try:
        parsed = [(name, fmt, conv) for _, name, fmt, conv in string.Formatter().parse(arg)
                  if name is not None]
    except ValueError as exc:
        raise SpecError(f"malformed placeholder in {arg!r}: {exc}", key) from None
    for name, fmt, conv in parsed:
        if name not in PLACEHOLDERS:
            raise SpecError(f"unknown placeholder {{{name}}} in {arg!r}; valid: "
                            + ", ".join(f"{{{p}}}" for p in PLACEHOLDERS), key)
        if fmt or conv:
            raise SpecError(f"placeholder {{{name}}} in {arg!r} takes no format spec or conversion", key)
    return [name for name, _, _ in parsed]


def validate(spec: SweepSpec) -> None:
    """Semantic checks the schema cannot express (labels, counts, cases, gates, command)."""
    if not _LABEL.match(spec.name):
        raise SpecError(f"{spec.name!r} must be letters, digits, '_', '.', '-' (it names files)", "name")
    if not spec.sides:
        raise SpecError("at least one side is required, e.g. sides: {a: {ref: HEAD}}", "sides")
    for label in spec.sides:
        if not _LABEL.match(label):
            raise SpecError(f"side label {label!r} must be letters, digits, '_', '.', '-'", f"sides.{label}")
        if not spec.sides[label].ref.strip():
            raise SpecError("must name a git ref", f"sides.{label}.ref")
    if spec.baseline not in spec.sides:
        raise SpecError(f"{spec.baseline!r} is not a side; sides: {', '.join(spec.sides)}", "baseline")
    if not spec.cases:
        raise SpecError("at least one case (algo/task/sim) is required", "cases")
    for i, text in enumerate(spec.cases):
        parse_case(text, spec.known, f"cases[{i}]")
    if len(set(spec.cases)) != len(spec.cases):
        raise SpecError("cases must not repeat (use repeats for more runs)", "cases")
    _check_positive(spec.repeats, "repeats")
    _check_positive(spec.timeout_s, "timeout_s")
    if spec.bootstrap_resamples < 100:
        raise SpecError(f"must be >= 100, got {spec.bootstrap_resamples}", "bootstrap_resamples")
    if spec.bootstrap_seed < 0:
        raise SpecError(f"must be >= 0, got {spec.bootstrap_seed}", "bootstrap_seed")
    _check_positive(spec.drift_threshold, "drift_threshold")
    _check_run_settings(RunSettings(spec.variant, spec.params, spec.env), spec.known, None)
    if not spec.command:
        raise SpecError("must be a non-empty argv list", "command")
    for i, arg in enumerate(spec.command):
        placeholders_in(arg, f"command[{i}]")
    for i, gate in enumerate(spec.gates):
        _check_gate(gate, spec, f"gates[{i}]")
    _check_metrics(spec.metrics)
    _check_hosts(spec.hosts)
    for label in spec.sides:
        side_settings(spec, label)


def spec_to_dict(spec: SweepSpec) -> dict[str, Any]:
    """Plain JSON-able form of a validated spec (enums as their values)."""
    return OmegaConf.to_container(OmegaConf.structured(spec), enum_to_str=True)  # type: ignore[return-value]


def _check_run_settings(settings: RunSettings, known: KnownNames, where: str | None) -> None:
    """Check variant, params and env; ``where`` names the side overrides they came from, if any."""
    if known.variants and settings.variant not in known.variants:
        _fail("variant", f"unknown variant {settings.variant!r}; known: {', '.join(known.variants)}", where)
    p = settings.params
    for name in ("num_envs", "measure", "replay_capacity"):
        if getattr(p, name) <= 0:
            _fail(f"params.{name}", f"must be > 0, got {getattr(p, name)}", where)
    for name in ("warmup", "seed", "threads"):
        if getattr(p, name) < 0:
            _fail(f"params.{name}", f"must be >= 0, got {getattr(p, name)}", where)
    for name, value in settings.env.items():
        if not _ENV_NAME.match(name):
            _fail(f"env.{name}", f"{name!r} is not a valid environment variable name", where)
        if not isinstance(value, str):
            _fail(f"env.{name}", f"must be a string, got {value!r}", where)


def _fail(key: str, message: str, where: str | None) -> None:
    """Raise for ``key``; when the value came from side overrides, name those and mention ``key``."""
    raise SpecError(f"{key}: {message}", where) if where else SpecError(message, key)


def _check_metric(metric: str, key: str) -> None:
    if not _METRIC.match(metric):
        raise SpecError(f"metric {metric!r} must be 'throughput' or a phase name ending in '_ms'", key)


def _check_metrics(metrics: list[str]) -> None:
    if not metrics:
        raise SpecError("at least one metric is required, e.g. [throughput, physics_ms]", "metrics")
    for i, metric in enumerate(metrics):
        _check_metric(metric, f"metrics[{i}]")
    if len(set(metrics)) != len(metrics):
        raise SpecError("metrics must not repeat", "metrics")


def _check_gate(gate: GateSpec, spec: SweepSpec, key: str) -> None:
    _check_metric(gate.metric, f"{key}.metric")
    if gate.min_ratio is None and gate.max_ratio is None:
        raise SpecError("needs min_ratio (higher is better) or max_ratio (lower is better)", key)
    for bound in ("min_ratio", "max_ratio"):
        value = getattr(gate, bound)
        if value is not None and value <= 0:
            raise SpecError(f"must be > 0, got {value}", f"{key}.{bound}")
    if not 0 < gate.confidence < 1:
        raise SpecError(f"must lie strictly between 0 and 1 (e.g. 0.95), got {gate.confidence}",
                        f"{key}.confidence")
    if gate.case is not None and gate.case not in spec.cases:
        raise SpecError(f"{gate.case!r} is not one of the sweep's cases", f"{key}.case")
    if gate.side is not None and gate.side not in spec.sides:
        raise SpecError(f"{gate.side!r} is not a side; sides: {', '.join(spec.sides)}", f"{key}.side")
    if gate.side == spec.baseline:
        raise SpecError(f"{gate.side!r} is the baseline; a gate compares another side to it", f"{key}.side")


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


def _read_yaml(path: Path) -> DictConfig:
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
        return OmegaConf.from_dotlist(list(items))
    except OmegaConfBaseException as exc:
        raise SpecError(f"cannot parse {list(items)}: {_first_line(exc)}", key) from None


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
        if isinstance(exc, TypeError):
            message = f"{message} (a list or mapping is overridden whole, e.g. cases=[a/b/c])"
        raise SpecError(message, key) from None
    return merged


def _first_line(exc: Exception) -> str:
    msg = getattr(exc, "msg", None) or str(exc)
    return str(msg).splitlines()[0] if msg else type(exc).__name__
