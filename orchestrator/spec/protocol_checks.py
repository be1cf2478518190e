"""What the sweep's protocol provides, and the checks against it: whether it is a suite, its ``json``
mapping, the metrics gates and reports may name, the default report rows.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import replace

from orchestrator.capabilities import (
    CPU_PHASES,
    INSTRUCTIONS_METRIC,
    Capability,
    ProtocolInfo,
    UnknownProtocolError,
    describe,
)
from orchestrator.errors import SpecError
from orchestrator.spec.commands import PARAM_NAME, is_envruntime_command
from orchestrator.spec.schema import REPORT_METRICS, Instrument, Order, SweepSpec

_DOTTED_PATH = re.compile(r"[^.\s]+(\.[^.\s]+)*\Z")
_METRIC = re.compile(r"(throughput|[A-Za-z0-9_.]+_ms)\Z")  # a name a v1 bench may report
# Every run column the store writes itself, whatever the bench reports (docs/design.md, "Results";
# the host_* and audit_* columns aside): a bench phase or metric never takes one of these names, and
# none of them is a bench metric but BENCH_PROCESS_METRICS (``is_metric_column``). A test checks that
# the store's writer has no other column of its own.
RESERVED_COLUMNS: frozenset[str] = frozenset((
    "sweep_id", "run_key", "side", "ref", "sha", "case", "algo", "task", "sim", "variant", "repeat", "order",
    "status", "error", "started_at", "ended_at", "wall_s", "throughput", "measure_wall_s", "exit_code",
    "steps", "log_dir", "bench_user_s", "bench_sys_s", "bench_max_rss_mib", "rss_source", "audited",
    "reused_from", "lock_wait_s", "suite_run_key", "bad_input", "protocol", "worktree", "python",
    "audit_modules", "params", "env", "pythonpath", "command", "ran_in", "lockstep_fallback", "blocks",
    "quiet_wait_s", "quiet_load", "quiet_steal", "quiet_met", "format_version", "sweep",
))
# The worker's measures of the bench process (``os.wait4``), reported beside the bench's own metrics.
BENCH_PROCESS_METRICS: tuple[str, ...] = ("bench_user_s", "bench_sys_s", "bench_max_rss_mib")


def is_metric_column(name: str) -> bool:
    """Whether run column ``name`` holds a figure a report row or a gate may read: ``throughput``, the
    worker's measures of the bench process, or what the bench reported (a phase, a metric): any column
    the store does not write itself, nor a ``host_*`` or ``audit_*`` one."""
    if name == "throughput" or name in BENCH_PROCESS_METRICS:
        return True
    return name not in RESERVED_COLUMNS and not name.startswith(("host_", "audit_"))


def is_suite(spec: SweepSpec) -> bool:
    """Whether one run of the sweep's protocol measures many cases (a benchmark suite): its ``cases``
    are names and globs of what the output holds, read from one run per side and round."""
    return describe(spec.protocol.value).has(Capability.MANY_CASES)


def protocol_info(spec: SweepSpec) -> ProtocolInfo:
    """The sweep's protocol under its ``json`` mapping and its order: what its runs report
    (``provides``: None where only the bench knows, until its first ok run), ``instructions`` too
    where the sweep counts them."""
    info = describe(spec.protocol.value, vars(spec.json) if spec.json is not None else {})
    info = info.in_lockstep() if spec.order is Order.lockstep else info
    if spec.instrument is Instrument.none:
        return info
    return replace(info, metrics=(*(info.metrics or ()), INSTRUCTIONS_METRIC))


def check_registered(spec: SweepSpec) -> None:
    """``protocol`` names a registered protocol (a built-in one or one a package registers)."""
    try:
        describe(spec.protocol.value)
    except UnknownProtocolError as exc:
        raise SpecError(str(exc), "protocol") from None


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
                        f"settings; valid: {valid}{did_you_mean(metric, provided)}{_cpu_hint(metric, info)}",
                        key)


def _cpu_hint(metric: str, info: ProtocolInfo) -> str:
    """Where CPU time per step is to be had, for a gate that asks it of a protocol that lacks it."""
    if metric not in CPU_PHASES:
        return ""
    if metric in info.lockstep_phases:
        return f"; {metric} is measured by shasweep's suite channel, in order: lockstep"
    return (f"; {metric} comes from a bench that reports it per step (the bench helper, envruntime's "
            "bench), from protocol time (cpu_ms per measured run), from a suite in order: lockstep, "
            "or from a json mapping that names it")


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
