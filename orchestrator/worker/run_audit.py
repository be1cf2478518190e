"""Audit verdicts: did a run really execute what its sweep asked for, and do its numbers add up?

Computed by the bench worker when the run finishes (``audit_result``), stored as the run's status
(``audit_failed``, the reasons as its error, ``audited`` true); ``analysis.legacy_audit`` applies the
same row checks at report time to older rows that were stored without it. The checks:

* a protocol whose bench reports what it loaded (``Capability.AUDIT_FIELDS``, v1): the loaded SHA
  (``audit_git_sha``) equals the requested ``sha``;
* every module of the sweep's ``audit_modules`` was imported, and every module the worker recorded
  (those, or by default the worktree's packages) came from the SHA's worktree
  (``module_audit.module_reasons``, from what the worker itself recorded);
* the loaded module (``audit_module_file``) lies in one of the worktree directories the worker put
  first on the bench's PYTHONPATH (``pythonpath``, the sweep's ``pythonpath`` key), when both are known;
* the run's ``variant``, ``params``, ``env`` and ``sha`` equal the planned ones for its side (no
  overrides beyond the sweep's); a bool param the command passes to the bench comes back as that bool
  in the header's ``params`` where the header reports it (``header_bool_reasons``); and it measured
  as many steps as ``params.measure`` asked for (when the command passes ``{measure}`` or the
  protocol runs ``params.measure`` itself; a run of a protocol without ``Capability.STEPS`` that
  reported no step has no step count to check), or, in a lockstep round, as many as its blocks
  commanded;
* for envruntime benches (env class from the ``envruntime`` package): the backend class is the one of
  the requested ``sim``, and a ``manager`` variant built all six managers;
* where the protocol carries a throughput window (``Capability.THROUGHPUT_WINDOW``: v1, a json
  mapping naming ``measure_wall_s``), the summary's throughput agrees within ``THROUGHPUT_TOLERANCE``
  with ``num_envs * measured steps / measure_wall_s`` and is no higher than the step timings allow
  (``numbers_reasons``).

The row checks are pure functions of plain data (no Dask), so the report can apply them to old rows.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import string
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import PurePath
from typing import Any

from orchestrator.capabilities import Capability, describe, describe_stored
from orchestrator.contract import AUDIT_FAILED, PlannedRun, RunResult
from orchestrator.store.migrations import stored_passes_variant
from orchestrator.store.parquet import run_row
from orchestrator.store.step_log import StepLog
from orchestrator.worker.module_audit import module_reasons

ENVRUNTIME_PACKAGE = "envruntime."
# The envruntime contract (envruntime/backends SIMS, envruntime/envs/manager_based.py), restated here
# because the orchestrator never imports envruntime.
# sim -> backend class name. The module inside ``envruntime.backends`` is not checked: it moved
# between SHAs (``motrix_backend`` -> ``motrix.backend``) and both sides of a sweep must pass.
ENVRUNTIME_BACKENDS: dict[str, str] = {"mujoco": "MujocoBackend", "motrix": "MotrixBackend",
                                       "mjwarp": "MjwarpBackend"}
BACKENDS_PACKAGE = "envruntime.backends."
ENVRUNTIME_MANAGERS: tuple[str, ...] = ("action", "observation", "reward", "termination", "event", "command")
# Runs-table columns the row audit reads (``steps`` is an integer, the others strings).
AUDIT_INPUT_COLUMNS: tuple[str, ...] = (
    "sha", "sim", "variant", "params", "env", "audit_git_sha", "audit_env_class", "audit_backend_class",
    "audit_managers", "audit_module_file", "pythonpath", "protocol", "worktree", "audit_modules",
)
THROUGHPUT_TOLERANCE = 0.05  # relative disagreement above which a summary's throughput is not believed


def audit_options(modules: Sequence[str], protocol: str | None, command: Sequence[str] | None
                  ) -> dict[str, Any]:
    """``audit_row``'s keyword arguments for a sweep's ``audit_modules``, ``protocol`` and ``command``:
    ``params.measure`` is a step count the bench was given only when the command passes ``{measure}``
    (the default envruntime command does) or the protocol runs ``params.measure`` itself."""
    check_measure = (describe_stored(protocol).has(Capability.MEASURE_PARAM) or not command
                     or any("{measure}" in str(arg) for arg in command))
    return {"modules": tuple(modules), "check_measure": check_measure}


def audit_row(run: Mapping[str, Any], planned_side: Mapping[str, Any] | None = None, *,
              modules: Sequence[str] = (), check_measure: bool = True) -> list[str]:
    """Why ``run`` (one runs-table row as a mapping) fails its audit; empty when it passes.

    ``planned_side`` holds what was planned for the run's side (``sha``, ``variant``, ``params``,
    ``env``); keys it lacks are not checked. ``modules`` and ``check_measure``: ``audit_options``.
    """
    sha = _sha_reasons(run) if describe_stored(run.get("protocol")).has(Capability.AUDIT_FIELDS) else []
    reasons = (sha + _module_reasons(run) + _plan_reasons(run, planned_side or {}, check_measure)
               + module_reasons(run, modules))
    if str(_text(run.get("audit_env_class")) or "").startswith(ENVRUNTIME_PACKAGE):
        reasons += _envruntime_reasons(run)
    return reasons


def numbers_reasons(summary: Mapping[str, Any] | None, steps: StepLog, num_envs: object) -> list[str]:
    """Why the summary's throughput is not believed: it disagrees by more than
    ``THROUGHPUT_TOLERANCE`` with ``num_envs * measured steps / measure_wall_s``, or exceeds what the
    step timings allow (a step lasts at least as long as its longest phase, so the measured steps
    took at least the sum of those: ``StepLog.longest_phase_ms``)."""
    throughput = _number((summary or {}).get("throughput"))
    envs = _number(num_envs)
    measured = steps.measured
    if throughput is None or envs is None or not measured:
        return []
    reasons = []
    window = _number((summary or {}).get("measure_wall_s"))
    if window is None or window <= 0:
        reasons.append(f"summary throughput {throughput:.6g} comes without a positive measure_wall_s "
                       "to check it against")
    else:
        expected = envs * measured / window
        if _disagree(throughput, expected):
            reasons.append(f"summary throughput {throughput:.6g} disagrees with num_envs {envs:g} x "
                           f"{measured} measured steps / measure_wall_s {window:.6g} = {expected:.6g}")
    floor_s = steps.longest_phase_ms / 1000.0
    if floor_s > 0:
        ceiling = envs * measured / floor_s
        if throughput > ceiling * (1 + THROUGHPUT_TOLERANCE):
            reasons.append(f"summary throughput {throughput:.6g} exceeds {ceiling:.6g}, the most the step "
                           f"timings allow ({measured} measured steps of at least {floor_s:.6g} s "
                           "in all)")
    return reasons


def audit_failure(reasons: list[str]) -> str:
    """The error text of a run that failed its audit."""
    return "audit: " + "; ".join(reasons)


def _disagree(value: float, reference: float) -> bool:
    return reference <= 0 or abs(value / reference - 1.0) > THROUGHPUT_TOLERANCE


def _sha_reasons(run: Mapping[str, Any]) -> list[str]:
    loaded, requested = _text(run.get("audit_git_sha")), _text(run.get("sha"))
    if loaded is None:
        return ["the header's audit records no git_sha, so the loaded code is unproven"]
    return [] if loaded == requested else [f"loaded SHA {loaded} is not the requested {requested}"]


def _module_reasons(run: Mapping[str, Any]) -> list[str]:
    """The loaded module must come from one of the run's PYTHONPATH directories of its worktree."""
    module, directories = _text(run.get("audit_module_file")), _json_list(run.get("pythonpath"))
    if module is None or not directories:
        return []
    inside = any(PurePath(os.path.normpath(module)).is_relative_to(os.path.normpath(d)) for d in directories)
    return [] if inside else [f"loaded module {module} is in none of the pythonpath directories "
                              f"{', '.join(directories)}"]


def _plan_reasons(run: Mapping[str, Any], planned: Mapping[str, Any], check_measure: bool) -> list[str]:
    reasons = []
    checked = ("sha", "variant") if stored_passes_variant(run.get("command")) else ("sha",)  # else none
    for key in checked:
        if key in planned and _text(run.get(key)) != planned[key]:
            reasons.append(f"{key} {_text(run.get(key))!r} is not the sweep's {planned[key]!r}")
    params = _json_object(run.get("params"))
    for key in ("params", "env"):
        if key in planned:
            reasons += _mapping_reasons(key, _json_object(run.get(key)), planned[key])
    steps, measure = _number(run.get("steps")), _number((params or {}).get("measure"))
    if "commanded_steps" in planned:  # a lockstep round: the worker commanded the measured steps
        if steps != planned["commanded_steps"]:
            commanded = planned["commanded_steps"]
            reasons.append(f"measured {steps:g} steps, the lockstep round commanded {commanded}")
        return reasons
    counted = steps is not None and (steps > 0 or describe_stored(run.get("protocol")).has(Capability.STEPS))
    if check_measure and counted and measure is not None and steps != measure:
        reasons.append(f"measured {steps:g} steps, params.measure asked for {measure:g}")
    return reasons


def _mapping_reasons(key: str, ran: dict | None, planned: Mapping[str, Any]) -> list[str]:
    """One reason per entry of ``ran`` (a run's params or env) that differs from the sweep's."""
    if ran is None:
        return [f"{key} not recorded as a JSON object"]
    names = sorted(set(ran) | set(planned))
    return [f"{key}.{name} {ran.get(name, 'unset')!r} is not the sweep's {planned.get(name, 'unset')!r}"
            for name in names if ran.get(name) != planned.get(name)]


def _envruntime_reasons(run: Mapping[str, Any]) -> list[str]:
    reasons = []
    sim, backend = _text(run.get("sim")), _text(run.get("audit_backend_class"))
    expected = ENVRUNTIME_BACKENDS.get(sim or "")
    if expected is None:
        reasons.append(f"sim {sim!r} has no envruntime backend; known: {', '.join(ENVRUNTIME_BACKENDS)}")
    elif not (backend or "").startswith(BACKENDS_PACKAGE) or backend.rpartition(".")[2] != expected:
        reasons.append(f"sim {sim!r} ran on backend {backend} instead of {BACKENDS_PACKAGE}*.{expected}")
    if _text(run.get("variant")) == "manager":
        built = _json_list(run.get("audit_managers"))
        missing = [name for name in ENVRUNTIME_MANAGERS if name not in built]
        if missing:
            reasons.append(f"manager variant built {', '.join(built) or 'no managers'}; "
                           f"missing {', '.join(missing)}")
    return reasons


def _text(value: object) -> str | None:
    """A string cell, None for null/NaN."""
    return value if isinstance(value, str) else None


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def _json_object(value: object) -> dict | None:
    parsed = _parse_json(value)
    return parsed if isinstance(parsed, dict) else None


def _json_list(value: object) -> list[str]:
    parsed = _parse_json(value)
    return [str(v) for v in parsed] if isinstance(parsed, list) else []


def _parse_json(value: object) -> object:
    if not isinstance(value, str):
        return None
    try:
        return json.loads(value)
    except (json.JSONDecodeError, RecursionError):
        return None


def header_bool_reasons(run: PlannedRun, header: Mapping[str, Any] | None) -> list[str]:
    """One reason per bool param the command passes to the bench that the header's ``params`` report as
    anything else: a bench that parsed ``--fast False`` as true ran what the sweep did not ask for, while
    the run's row (the planned params) says false."""
    reported = (header or {}).get("params")
    if not isinstance(reported, dict):
        return []
    passed = set()
    for arg in run.argv_template:
        with contextlib.suppress(ValueError):  # the plan checked the template; never fail the audit on it
            passed |= {name for _, name, _, _ in string.Formatter().parse(arg) if name}
    reasons = []
    for name, value in run.params.items():
        if isinstance(value, bool) and name in passed and name in reported \
                and _as_bool(reported[name]) is not value:
            reasons.append(f"params.{name}: the bench's header reports {json.dumps(reported[name])[:80]}, "
                           f"the sweep passed {json.dumps(value)}")
    return reasons


def _as_bool(value: object) -> bool | None:
    """A reported bool: JSON true/false, or text that spells one (a bench that kept its argv's words)."""
    if isinstance(value, bool):
        return value
    word = value.strip().lower() if isinstance(value, str) else None
    if word in ("true", "yes", "on", "1"):
        return True
    return False if word in ("false", "no", "off", "0") else None


def audit_result(run: PlannedRun, result: RunResult) -> RunResult:
    """``result`` as the worker stores it: marked audited, and ``audit_failed`` (the reasons as its
    error) when an ok run fails its audit."""
    if result.status != "ok":
        return replace(result, audited=True)
    planned = {"sha": run.sha, "variant": run.variant, "params": run.params, "env": run.env}
    if result.ran_in == "lockstep":
        planned["commanded_steps"] = run.lockstep.commanded_steps
    options = audit_options(run.audit_modules or (), run.protocol, run.argv_template)
    reasons = audit_row(run_row(run, result), planned, **options) + header_bool_reasons(run, result.header)
    if describe(run.protocol, run.json_mapping).has(Capability.THROUGHPUT_WINDOW):
        reasons += numbers_reasons(result.summary, result.steps, run.params.get("num_envs"))
    if not reasons:
        return replace(result, audited=True)
    return replace(result, audited=True, status=AUDIT_FAILED, error=audit_failure(reasons))
