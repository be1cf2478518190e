"""Resuming a recorded sweep (``shasweep run --resume SWEEP_ID``): re-plan it exactly as it was
recorded and keep only the runs without an ``ok`` result.

The plan is rebuilt from the record's validated spec and its resolved SHAs (never from the refs,
which may have moved since) under the same sweep id, so every run keeps its ``run_key``. A re-run
replaces that run's files, so the results never hold two rows for one run.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from orchestrator.contract import PlannedRun
from orchestrator.errors import InvalidInputError, RefError
from orchestrator.plan.expand import ResolvedSweep, build_plan, check_writable
from orchestrator.plan.refs import repo_root, resolve_ref
from orchestrator.spec.load import side_settings, spec_from_config
from orchestrator.store.parquet import run_statuses
from orchestrator.store.records import OUTCOME_KEYS, read_record, record_path


@dataclass(frozen=True)
class ResumePlan:
    """A recorded sweep re-planned: every run of it, and the status its results hold for each."""

    resolved: ResolvedSweep
    record: dict[str, Any]
    runs: list[PlannedRun]  # the whole plan, same order and run keys as the first attempt
    statuses: dict[str, str | None]  # run_key -> status in the results (None: unreadable file)

    @property
    def todo(self) -> list[PlannedRun]:
        """The runs to dispatch again, in plan order: every run not recorded ``ok``."""
        return [run for run in self.runs if self.statuses.get(run.run_key) != "ok"]

    def refreshed(self) -> ResumePlan:
        """The same plan with its record and the statuses of its results as they are now."""
        root, sweep_id = self.resolved.results_root, self.record["sweep_id"]
        return replace(self, record=read_record(root, sweep_id), statuses=run_statuses(root, sweep_id))

    def merged_outcomes(self, dispatched: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The outcomes of the re-dispatched runs completed with the runs already ok, in plan order."""
        again = {run["run_key"]: run for run in dispatched}
        return [again.get(run.run_key) or _ok_outcome(run) for run in self.runs]


def plan_resume(results_root: Path, sweep_id: str) -> ResumePlan:
    """Re-plan ``sweep_id`` from its record under ``results_root`` and read what its results hold.

    Raises ``InvalidInputError`` (exit 2) when the record is missing or unusable, a recorded SHA is
    gone from the repository, or the re-planned run keys do not match what was recorded.
    """
    record = read_record(results_root, sweep_id)
    try:
        resolved = resolve_recorded(record, results_root)
        runs = build_plan(resolved, sweep_id)
        statuses = run_statuses(results_root, sweep_id)
        _check_same_plan(record, runs, statuses)
    except InvalidInputError as exc:
        raise type(exc)(f"cannot resume sweep {sweep_id!r} ({record_path(results_root, sweep_id)}): "
                        f"{exc}") from None
    return ResumePlan(resolved=resolved, record=record, runs=runs, statuses=statuses)


def resolve_recorded(record: dict[str, Any], results_root: Path) -> ResolvedSweep:
    """The sweep of ``record`` pinned to its recorded repository and SHAs, writing to ``results_root``."""
    spec = spec_from_config(OmegaConf.create(_field(record, "spec", dict)))
    repo = repo_root(Path(_field(record, "repo", str)))
    sides = _field(record, "sides", dict)
    shas = {}
    for label in spec.sides:
        key = f"sides.{label}.sha"
        sha = (sides.get(label) or {}).get("sha")
        if not isinstance(sha, str) or resolve_ref(repo, sha, key) != sha:
            raise RefError(f"the recorded SHA {sha!r} is not a full commit SHA", key)
        shas[label] = sha
    settings = {label: side_settings(spec, label) for label in spec.sides}
    check_writable(results_root)
    sweep_dir = record.get("sweep_dir")
    return ResolvedSweep(spec=spec, repo=repo, results_root=results_root, shas=shas, settings=settings,
                         sweep_dir=Path(sweep_dir) if isinstance(sweep_dir, str) else None)


def _check_same_plan(record: dict[str, Any], runs: list[PlannedRun], statuses: dict[str, str | None]) -> None:
    """The re-planned runs must be the recorded ones: same count, and every recorded key among them."""
    planned = record.get("planned_runs")
    if planned != len(runs):
        raise InvalidInputError(f"the record plans {planned!r} runs, re-planning it gives {len(runs)}",
                                "planned_runs")
    keys = {run.run_key for run in runs}
    recorded = {o.get("run_key") for o in record.get("outcomes") or [] if isinstance(o, dict)}
    unknown = sorted(str(key) for key in (recorded | set(statuses)) - keys)
    if unknown:
        raise InvalidInputError(f"run keys {', '.join(unknown[:3])} were recorded but are not in the "
                                "re-planned sweep (recorded by another shasweep version?)", "outcomes")


def _field(record: dict[str, Any], name: str, kind: type) -> Any:
    value = record.get(name)
    if not isinstance(value, kind):
        raise InvalidInputError(f"missing or not a {kind.__name__} in the sweep record", name)
    return value


def _ok_outcome(run: PlannedRun) -> dict[str, Any]:
    """The outcome entry of a run an earlier attempt completed ``ok``."""
    return {key: getattr(run, key, None) for key in OUTCOME_KEYS} | {"status": "ok", "error": None}
