"""Resuming a recorded sweep (``shasweep run --resume SWEEP_ID``): re-plan it exactly as it was
recorded and keep only the runs without an ``ok`` result. An adaptive sweep's plan is its first
``repeats`` rounds plus the later-round runs its results hold; the adaptive loop
(``dispatch.adaptive``) then replays its decisions round by round and runs what is still missing.

The plan is rebuilt from the record's validated spec and its resolved SHAs (never from the refs,
which may have moved since) under the same sweep id, so every run keeps its ``run_key``. A re-run
replaces that run's files, so the results never hold two rows for one run.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from orchestrator.contract import STATUSES, Outcome, PlannedRun
from orchestrator.errors import InvalidInputError, RefError
from orchestrator.plan.expand import ResolvedSweep, adaptive_plan, build_plan
from orchestrator.plan.integrity import check_digest
from orchestrator.plan.refs import repo_root, resolve_ref
from orchestrator.plan.roots import check_writable
from orchestrator.spec.load import revalidated, side_settings
from orchestrator.spec.record import SweepRecord
from orchestrator.store.query import run_statuses
from orchestrator.store.records import read_record, read_record_json, record_path


@dataclass(frozen=True)
class ResumePlan:
    """A recorded sweep re-planned: every run of it, and the status its results hold for each."""

    resolved: ResolvedSweep
    record: SweepRecord
    runs: list[PlannedRun]  # the plan so far, same order and run keys as the first attempt
    statuses: dict[str, str | None]  # run_key -> status in the results (None: unreadable file)
    fixed: int | None = None  # how many of ``runs`` are the first ``repeats`` rounds (None: all)

    @property
    def ok_keys(self) -> set[str]:
        """The runs that stay as they are: ok, and (lockstep) in a round whose every run is ok."""
        redone = {run.run_key for run in self._whole_rounds(self.runs)}
        return {key for key, status in self.statuses.items() if status == "ok" and key not in redone}

    @property
    def todo(self) -> list[PlannedRun]:
        """The runs to dispatch again, in plan order: every run of the first rounds not recorded
        ``ok``, and every run of a lockstep round that has one (later rounds are the adaptive loop's
        to decide)."""
        return self._whole_rounds(self.runs[:self.fixed])

    def _whole_rounds(self, runs: list[PlannedRun]) -> list[PlannedRun]:
        """The runs not ok, and the other runs of a lockstep round of theirs: a round runs again whole."""
        redo = [run for run in runs if self.statuses.get(run.run_key) != "ok"]
        rounds = {(run.case, run.repeat) for run in redo if run.lockstep}
        return [run for run in runs if self.statuses.get(run.run_key) != "ok"
                or (run.lockstep and (run.case, run.repeat) in rounds)]

    def refreshed(self) -> ResumePlan:
        """The same plan with its record and the statuses of its results as they are now."""
        root, sweep_id = self.resolved.results_root, self.record.sweep_id
        return replace(self, record=read_record(root, sweep_id), statuses=run_statuses(root, sweep_id))

    def merged_outcomes(self, dispatched: list[Outcome]) -> list[Outcome]:
        """The outcomes of the re-dispatched runs completed with the runs already ok, in plan order."""
        again = {outcome.run_key: outcome for outcome in dispatched}
        earlier = [again.pop(run.run_key, None) or self._earlier_outcome(run) for run in self.runs]
        return sorted(earlier + list(again.values()), key=lambda outcome: outcome.order)

    def _earlier_outcome(self, run: PlannedRun) -> Outcome:
        """The outcome of a run not dispatched this time: ok, or as its results file left it."""
        status = self.statuses.get(run.run_key)
        if status == "ok":
            return run.outcome(status="ok")
        return run.outcome(status=status if status in STATUSES else "failed",
                           error="an earlier attempt left it not ok; the adaptive rounds no longer needed it")


def plan_resume(results_root: Path, sweep_id: str) -> ResumePlan:
    """Re-plan ``sweep_id`` from its record under ``results_root`` and read what its results hold.

    Raises ``InvalidInputError`` (exit 2) when the record is missing or unusable, a recorded SHA is
    gone from the repository, the record's digest does not match it (``plan.integrity``), or the
    re-planned run keys do not match what was recorded.
    """
    raw = read_record_json(results_root, sweep_id)
    try:
        record = read_record(results_root, sweep_id)
        resolved = resolve_recorded(record, results_root)
        check_digest(raw)  # nothing the record says runs unless shasweep wrote it so
        fixed = build_plan(resolved, sweep_id)
        extra = adaptive_plan(resolved, sweep_id)
        statuses = run_statuses(results_root, sweep_id)
        _check_same_plan(record, fixed, extra, statuses)
    except InvalidInputError as exc:
        raise type(exc)(f"cannot resume sweep {sweep_id!r} ({record_path(results_root, sweep_id)}): "
                        f"{exc}") from None
    ran = fixed + [run for run in extra if run.run_key in statuses]
    return ResumePlan(resolved=resolved, record=record, runs=ran, statuses=statuses, fixed=len(fixed))


def resolve_recorded(record: SweepRecord, results_root: Path) -> ResolvedSweep:
    """The sweep of ``record`` pinned to its recorded repository and SHAs, writing to ``results_root``."""
    spec = revalidated(record.spec)
    if not record.repo:
        raise InvalidInputError("missing in the sweep record", "repo")
    repo = repo_root(Path(record.repo))
    shas = {}
    for label in spec.sides:
        key = f"sides.{label}.sha"
        side = record.sides.get(label)
        sha = side.sha if side is not None else None
        if sha is None or resolve_ref(repo, sha, key) != sha:
            raise RefError(f"the recorded SHA {sha!r} is not a full commit SHA", key)
        shas[label] = sha
    settings = {label: side_settings(spec, label) for label in spec.sides}
    check_writable(results_root)
    return ResolvedSweep(spec=spec, repo=repo, results_root=results_root, shas=shas, settings=settings,
                         sweep_dir=Path(record.sweep_dir) if record.sweep_dir is not None else None)


def _check_same_plan(record: SweepRecord, fixed: list[PlannedRun], extra: list[PlannedRun],
                     statuses: dict[str, str | None]) -> None:
    """The re-planned runs must be the recorded ones: a count between the first rounds' and all
    rounds', and every recorded key among them."""
    planned = record.planned_runs
    if not len(fixed) <= planned <= len(fixed) + len(extra):
        expected = f"{len(fixed)}" + (f" to {len(fixed) + len(extra)}" if extra else "")
        raise InvalidInputError(f"the record plans {planned!r} runs, re-planning it gives {expected}",
                                "planned_runs")
    keys = {run.run_key for run in fixed + extra}
    recorded = {outcome.run_key for outcome in record.outcomes}
    unknown = sorted(str(key) for key in (recorded | set(statuses)) - keys)
    if unknown:
        raise InvalidInputError(f"run keys {', '.join(unknown[:3])} were recorded but are not in the "
                                "re-planned sweep (recorded by another shasweep version?)", "outcomes")
