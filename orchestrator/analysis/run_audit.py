"""Audit verdicts: did each ok run really execute what its sweep asked for?

Checked from the runs table alone (the header's ``audit_*`` columns and the planned columns), plus the
sweep record when one is given:

* run protocol v1: the loaded SHA (``audit_git_sha``) equals the requested ``sha``;
* every module of the sweep's ``audit_modules`` was imported from the SHA's worktree (``module_audit``);
* the run's ``variant``, ``params``, ``env`` and ``sha`` equal the sweep record's for its side (no
  overrides beyond the sweep's), and it measured as many steps as ``params.measure`` asked for (when
  the command passes ``{measure}`` or the protocol is ``time``; a json run without per-step samples
  has no step count to check);
* for envruntime benches (env class from the ``envruntime`` package): the backend class is the one of
  the requested ``sim``, and a ``manager`` variant built all six managers.

An ok run that fails its audit gets status ``audit_failed`` and the reasons as its error, so reports
list it with the failures and keep its numbers out of every median and gate.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pandas as pd

from orchestrator.analysis.module_audit import module_reasons

AUDIT_FAILED = "audit_failed"
ENVRUNTIME_PACKAGE = "envruntime."
# The envruntime contract (envruntime/backends/__init__.py SIMS, envruntime/envs/manager_based.py),
# restated here because the orchestrator never imports envruntime.
ENVRUNTIME_BACKENDS: dict[str, str] = {
    "mujoco": "envruntime.backends.mujoco_backend.MujocoBackend",
    "motrix": "envruntime.backends.motrix_backend.MotrixBackend",
    "mjwarp": "envruntime.backends.mjwarp_backend.MjwarpBackend",
}
ENVRUNTIME_MANAGERS: tuple[str, ...] = ("action", "observation", "reward", "termination", "event", "command")
# Runs-table columns the audit reads (``steps`` is an integer, the others strings).
AUDIT_INPUT_COLUMNS: tuple[str, ...] = (
    "sha", "sim", "variant", "params", "env", "audit_git_sha", "audit_env_class", "audit_backend_class",
    "audit_managers", "protocol", "worktree", "audit_modules",
)


def audit_run(run: Mapping[str, Any], planned_side: Mapping[str, Any] | None = None, *,
              modules: list[str] | tuple[str, ...] = (), check_measure: bool = True) -> list[str]:
    """Why ``run`` (one runs-table row) fails its audit; empty when it passes.

    ``planned_side`` is the sweep record's entry for the run's side (``ref``, ``sha``, ``variant``,
    ``params``, ``env``); keys it lacks are not checked. ``modules``: the sweep's ``audit_modules``;
    ``check_measure``: whether ``params.measure`` is a step count the bench was given.
    """
    sha = _sha_reasons(run) if (_text(run.get("protocol")) or "v1") == "v1" else []
    reasons = sha + _plan_reasons(run, planned_side or {}, check_measure) + module_reasons(run, modules)
    if str(_text(run.get("audit_env_class")) or "").startswith(ENVRUNTIME_PACKAGE):
        reasons += _envruntime_reasons(run)
    return reasons


def apply_audit(runs: pd.DataFrame, record: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """``runs`` with every ok run that fails its audit marked ``audit_failed`` (error: the reasons)."""
    if runs.empty or "status" not in runs:
        return runs
    sides = (record or {}).get("sides") or {}
    spec = (record or {}).get("spec") or {}
    modules = list(spec.get("audit_modules") or [])
    check_measure = spec.get("protocol") == "time" or not spec.get("command") \
        or any("{measure}" in str(arg) for arg in spec.get("command") or [])
    audited = runs.copy()
    for index, run in audited[audited["status"] == "ok"].iterrows():
        reasons = audit_run(run.to_dict(), sides.get(run.get("side")), modules=modules,
                            check_measure=check_measure)
        if reasons:
            audited.loc[index, "status"] = AUDIT_FAILED
            audited.loc[index, "error"] = "audit: " + "; ".join(reasons)
    return audited


def _sha_reasons(run: Mapping[str, Any]) -> list[str]:
    loaded, requested = _text(run.get("audit_git_sha")), _text(run.get("sha"))
    if loaded is None:
        return ["the header's audit records no git_sha, so the loaded code is unproven"]
    return [] if loaded == requested else [f"loaded SHA {loaded} is not the requested {requested}"]


def _plan_reasons(run: Mapping[str, Any], planned: Mapping[str, Any], check_measure: bool) -> list[str]:
    reasons = []
    for key in ("sha", "variant"):
        if key in planned and _text(run.get(key)) != planned[key]:
            reasons.append(f"{key} {_text(run.get(key))!r} is not the sweep's {planned[key]!r}")
    params = _json_object(run.get("params"))
    for key in ("params", "env"):
        if key in planned:
            reasons += _mapping_reasons(key, _json_object(run.get(key)), planned[key])
    steps, measure = _number(run.get("steps")), _number((params or {}).get("measure"))
    counted = steps is not None and (steps > 0 or (_text(run.get("protocol")) or "v1") == "v1")
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
    elif backend != expected:
        reasons.append(f"sim {sim!r} ran on backend {backend} instead of {expected}")
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
    if isinstance(value, bool) or not isinstance(value, int | float) or pd.isna(value):
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
    except json.JSONDecodeError:
        return None
