"""Bisect: the first commit of a first-parent history whose gate FAILs against a good one.

Every step is an ordinary recorded sweep (``session.sweep.run_sweep``, the path ``shasweep run``
takes) of the candidate commit (side ``cand``) against the good one (side ``good``, the baseline),
named ``<bisect id>.<sha12>``. The good commit is measured once: a step reuses the good runs of
earlier steps (``store.reuse``, same round, same host) and measures only the rounds they did not
reach (``remeasure_good``: measured again in every step, paired in time with the candidate). The
first step (preflight) is the bad commit itself; the search is ``plan.bisect_search.BisectSearch``. The
bisect record (``store.bisects``) is rewritten after every step, so a resume reuses every step done
(a SHA is never measured twice in one bisect) and resumes a step's sweep that was interrupted.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orchestrator.errors import InvalidInputError, interruption
from orchestrator.plan.bisect_search import BAD, FOUND, SKIP, BisectSearch, Commit, first_parent_history
from orchestrator.plan.expand import resolve_sweep
from orchestrator.plan.refs import repo_root, resolve_ref
from orchestrator.plan.roots import check_writable
from orchestrator.session.options import RunOptions
from orchestrator.session.recorded import locate_results, reports_dir
from orchestrator.session.sweep import SweepPlan, resume, run_sweep
from orchestrator.spec.bisect_sweep import CANDIDATE_SIDE, GOOD_SIDE, load_bisect_spec
from orchestrator.spec.load import revalidated
from orchestrator.spec.record import spec_from_json, spec_to_json
from orchestrator.spec.schema import SideSpec, SweepSpec
from orchestrator.store import bisects
from orchestrator.store.atomic import write_text_atomic
from orchestrator.store.records import creation_order, next_sequence, read_record, sweeps_dir

if TYPE_CHECKING:
    from orchestrator.analysis.bisect_step import StepResult

NO_REGRESSION, FAILED, ABORTED = "no_regression", "failed", "aborted"


@dataclass(frozen=True)
class BisectOptions:
    """A new bisect: the commit whose gate PASSes, a later one whose gate FAILs, and whether the good
    commit is measured again in every step."""

    good: str
    bad: str
    remeasure_good: bool = False


@dataclass
class BisectRun:
    """A bisect: its record (``results/bisect/<id>.json``, rewritten after every step) and what the
    record pins. ``status`` is ``record["status"]``; ``problem`` says why there was nothing to
    bisect (status ``no_regression``)."""

    root: Path
    record: dict[str, Any]
    spec: SweepSpec  # sides good (at the good SHA) and cand; repo and results absolute
    commits: list[Commit]
    problem: str | None = None

    @property
    def bisect_id(self) -> str:
        return self.record["bisect_id"]

    @property
    def status(self) -> str:
        return self.record["status"]

    def save(self) -> None:
        bisects.write_bisect(self.root, self.bisect_id, self.record)

    def index_of(self, sha: str) -> int:
        return [c.sha for c in self.commits].index(sha)

    @property
    def record_path(self) -> Path:
        return bisects.bisect_path(self.root, self.bisect_id)

    def steps_markdown(self) -> str:
        """The steps taken, one row each, as a Markdown table (``render.bisect_page``)."""
        from orchestrator.render.bisect_page import bisect_steps_table
        from orchestrator.render.markdown import markdown_table

        return markdown_table(bisect_steps_table(self.record))

    def write_page(self) -> Path:
        """Write the bisect's HTML page (Bokeh) to ``<results>/reports/bisect-<id>.html``; its path."""
        from orchestrator.render.bisect_page import bisect_page

        path = reports_dir(self.root) / f"bisect-{self.bisect_id}.html"
        return write_text_atomic(path, bisect_page(self.record).render())


def bisect(spec_path: str | Path, overrides: Sequence[str], options: BisectOptions,
           run: RunOptions | None = None, *, cwd: Path | None = None) -> BisectRun:
    """Validate everything, resolve both refs once, record the bisect, then step until the search
    concludes (found, ambiguous, undecided, failed or no_regression: ``BisectRun.status``)."""
    run = run or RunOptions()
    run.security()
    spec = load_bisect_spec(Path(spec_path), list(overrides), options.good, options.bad)
    resolved = resolve_sweep(spec, cwd or Path.cwd(), Path(spec_path).resolve().parent)
    good, bad = resolved.shas[GOOD_SIDE], resolved.shas[CANDIDATE_SIDE]
    commits = first_parent_history(resolved.repo, good, bad)
    spec = replace(spec, repo=str(resolved.repo), results=str(resolved.results_root),
                   sides={GOOD_SIDE: SideSpec(ref=good), CANDIDATE_SIDE: SideSpec(ref=bad)})
    root = resolved.results_root
    created = datetime.now(UTC)
    bisect_id = bisects.reserve_bisect_id(root, spec.name, created)
    record = {"bisect_id": bisect_id, "created": created.isoformat(timespec="seconds"),
              "sequence": next_sequence(bisects.bisect_dir(root)), "status": "running",
              "repo": str(resolved.repo), "results_root": str(root), "sweep_dir": str(resolved.sweep_dir),
              "good_ref": options.good, "bad_ref": options.bad, "good": good, "bad": bad, "first_bad": None,
              "remeasure_good": options.remeasure_good,
              "remaining": [c.sha for c in commits], "skipped": [], "spec": spec_to_json(spec),
              "commits": [{"sha": c.sha, "subject": c.subject} for c in commits], "steps": []}
    job = BisectRun(root=root, record=record, spec=spec, commits=commits)
    job.save()
    _say(f"bisect {bisect_id}: {len(commits)} commits after good {good[:12]} up to bad {bad[:12]}, "
         f"results under {root}")
    return _run_locked(job, run)


def resume_bisect(bisect_id: str, results_root: str | Path = "results", run: RunOptions | None = None, *,
                  cwd: Path | None = None) -> BisectRun:
    """Continue recorded bisect ``bisect_id`` (or ``latest``): its repository and SHAs checked, every
    step done reused, an interrupted step's sweep resumed."""
    run = run or RunOptions()
    run.security()
    root = locate_results(results_root, cwd=cwd)
    bisect_id = bisects.latest_bisect_id(root) if bisect_id == "latest" else bisect_id
    record = bisects.read_bisect(root, bisect_id)
    where = f"cannot resume bisect {bisect_id!r} ({bisects.bisect_path(root, bisect_id)})"
    try:
        spec = revalidated(spec_from_json(record["spec"]))
        repo = repo_root(Path(record["repo"]))
        for key in ("good", "bad"):
            if resolve_ref(repo, record[key], key) != record[key]:
                raise InvalidInputError(f"the recorded SHA {record[key]!r} is not a full commit SHA", key)
        commits = [Commit(sha=c["sha"], subject=c["subject"]) for c in record["commits"]]
    except (KeyError, TypeError) as exc:
        raise InvalidInputError(f"{where}: the record lacks {exc}") from None
    except InvalidInputError as exc:
        raise type(exc)(f"{where}: {exc}") from None
    spec = replace(spec, results=str(root))
    check_writable(root)
    _say(f"bisect {bisect_id}: resuming ({len(record.get('steps') or [])} steps recorded), "
         f"results under {root}")
    job = BisectRun(root=root, record={**record, "status": "running", "results_root": str(root)}, spec=spec,
                    commits=commits)
    return _run_locked(job, run)


def _run_locked(job: BisectRun, run: RunOptions) -> BisectRun:
    with bisects.bisect_lock(job.root, job.bisect_id):
        _search(job, run)
    return job


def _search(job: BisectRun, run: RunOptions) -> None:
    """Preflight, then step until the search concludes; the outcome is recorded."""
    started = time.monotonic()
    try:
        with _cluster(run) as step_options:
            preflight = _step(job, job.record["bad"], "preflight", step_options)
            if preflight.failure is not None:
                return _finish(job, FAILED, started, failure=f"preflight of bad: {preflight.failure}")
            if preflight.mark == SKIP:  # the one commit that cannot be skipped
                reason = f"the bench of --bad {job.record['bad'][:12]} fails ({preflight.reason})"
                return _finish(job, FAILED, started, failure=f"{reason}; pick a --bad it runs on")
            if preflight.mark != BAD:
                job.problem = (f"--bad {job.record['bad'][:12]} does not FAIL the gate against --good "
                               f"{job.record['good'][:12]} ({preflight.verdict}: {preflight.reason}); "
                               "nothing to bisect")
                return _finish(job, NO_REGRESSION, started)
            search = BisectSearch(tuple(c.sha for c in job.commits), {job.record["bad"]: BAD})
            search = _replay(job, search)
            while (sha := search.next_commit()) is not None:
                result = _step(job, sha, "step", step_options)
                if result.failure is not None:
                    return _finish(job, FAILED, started, failure=f"step {sha[:12]}: {result.failure}")
                search = search.mark(sha, result.mark)
    except InvalidInputError:
        raise
    except KeyboardInterrupt as exc:  # between steps (during a run the dispatcher makes it a cancelled run)
        return _finish(job, FAILED, started, failure=interruption(exc))
    except BaseException as exc:
        job.record.update(status=ABORTED, stopped_reason=f"{type(exc).__name__}: {exc}")
        job.save()
        raise
    conclusion = search.conclusion()
    job.record.update(remaining=list(conclusion.remaining), skipped=list(conclusion.skipped))
    if conclusion.status == FOUND:
        job.record["first_bad"] = conclusion.first_bad
        job.record["first_bad_subject"] = job.commits[job.index_of(conclusion.first_bad)].subject
    return _finish(job, conclusion.status, started)


def _replay(job: BisectRun, search: BisectSearch) -> BisectSearch:
    """``search`` with the marks of every step already recorded (a resumed bisect)."""
    for step in job.record["steps"]:
        if step.get("role") == "step" and step.get("mark"):
            search = search.mark(step["sha"], step["mark"])
    return search


def _step(job: BisectRun, sha: str, role: str, options: RunOptions) -> StepResult:
    """Compare ``sha`` with good: the recorded step if there is one, else its sweep (resumed if a
    killed bisect left it unfinished, started otherwise); the result is recorded at once. The good
    commit's runs of earlier steps are reused (``store.reuse``: good is measured once per round)
    unless the bisect was started with ``remeasure_good``. Only the preflight stops at a gate metric
    its bench does not report (exit 2); a later step lacking it is NO DATA, skipped."""
    from orchestrator.analysis.bisect_step import StepResult, read_step  # the report's readers
    from orchestrator.store.reuse import RunPool

    recorded = next((s for s in job.record["steps"] if s["sha"] == sha and s.get("mark")), None)
    if recorded is not None:
        _say(f"bisect: {sha[:12]} reused from sweep {recorded['sweep_id']}: {recorded['mark']}")
        return StepResult(**{k: recorded.get(k) for k in StepResult.__dataclass_fields__})
    name = f"{job.bisect_id}.{sha[:12]}"
    sweep_id = _existing_sweep(job.root, name)
    result = read_step(job.root, sweep_id) if sweep_id else None
    if not job.record.get("remeasure_good"):
        donors = [s["sweep_id"] for s in job.record["steps"] if s.get("sweep_id") != sweep_id]
        options = replace(options, reuse=RunPool(job.root, donors).reuse)
    if role != "preflight":  # the preflight showed both ends report the gate's metric: a commit
        options = replace(options, check_first_run=False)  # lacking it is NO DATA, a skip
    if sweep_id and result.failure is not None:  # interrupted before it ended: run what is missing
        resume(sweep_id, job.root, options)
        result = read_step(job.root, sweep_id)
    if result is None:
        spec = replace(job.spec, name=name,
                       sides={GOOD_SIDE: SideSpec(ref=job.record["good"]), CANDIDATE_SIDE: SideSpec(ref=sha)})
        sweep_dir = job.record.get("sweep_dir")  # a bisect recorded before it was kept: the repository
        resolved = resolve_sweep(spec, Path(job.record["repo"]), Path(sweep_dir) if sweep_dir else None)
        sweep_id = run_sweep(SweepPlan.of(resolved), options).sweep_id
        result = read_step(job.root, sweep_id)
    subject = job.commits[job.index_of(sha)].subject
    entry = {"role": role, "index": job.index_of(sha), "sha": sha, "subject": subject, **result.to_dict()}
    job.record["steps"] = [s for s in job.record["steps"] if s["sha"] != sha] + [entry]
    job.save()
    ratio = "-" if result.ratio is None else f"{result.ratio:.3f}"
    _say(f"bisect: {role} {sha[:12]} {subject!r}: ratio {ratio} {result.interval} "
         f"{result.verdict or '-'} -> {result.mark or 'not decided'} ({result.runs} runs; {result.reason})")
    return result


def _existing_sweep(root: Path, name: str) -> str | None:
    """The latest recorded sweep named ``name`` (a step of this bisect), if any."""
    found = []
    for path in sweeps_dir(root).glob(f"{name}-*.json"):
        try:
            record = read_record(root, path.stem)
        except InvalidInputError:  # reserved but never written (nothing was dispatched), or unreadable
            continue
        if record.spec.name == name:
            found.append((creation_order(path.stem, record.sequence), path.stem))
    return max(found)[1] if found else None


@contextmanager
def _cluster(options: RunOptions) -> Iterator[RunOptions]:
    """``options``, or with the address of one embedded cluster every step of the bisect shares."""
    if options.scheduler is not None:
        yield options
        return
    from orchestrator.dispatch.cluster import connect  # imports Dask: only when actually running

    with connect(None) as conn:
        yield replace(options, scheduler=conn.client.scheduler.address)


def _finish(job: BisectRun, status: str, started: float, failure: str | None = None) -> None:
    job.record.update(status=status, ended=datetime.now(UTC).isoformat(timespec="seconds"),
                      wall_s=round(time.monotonic() - started, 3), stopped_reason=failure)
    job.save()


def _say(line: str) -> None:
    print(line, flush=True)
