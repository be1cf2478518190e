"""``shasweep bisect``: find the first commit of a first-parent history whose gate FAILs against a good one.

Every step is an ordinary recorded sweep (``run.start_sweep``, the path ``shasweep run`` takes:
plan, dispatch, Parquet, report model, gate verdict) of the candidate commit (side ``cand``) against
``--good`` (side ``good``, the baseline), named ``<bisect id>.<sha12>``, so it shows on the board and
in ``shasweep report`` like any sweep. The good commit is measured once: a step reuses the good runs
of earlier steps (``store.reuse``, same round, same host) and measures only the rounds they did not
reach (``--remeasure-good``: measured again in every step, paired in time with the candidate). The
first step (preflight) is ``--bad`` itself; the search is ``plan.bisect.BisectSearch``. The bisect
record (``store.bisects``) is rewritten after every step, so ``--resume`` reuses every step done (a
SHA is never measured twice in one bisect) and resumes a step's sweep that was interrupted. Exit:
0 found, 2 invalid input or no regression between good and bad, 3 a run failed beyond skipping,
4 undecided (the remaining range is printed).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from orchestrator.analysis.bisect_step import StepResult, read_step
from orchestrator.cli.run import resume_sweep, start_sweep
from orchestrator.cli.servers import add_tls_arguments
from orchestrator.errors import (
    EXIT_GATE_INCONCLUSIVE,
    EXIT_INVALID,
    EXIT_OK,
    EXIT_RUN_FAILED,
    InvalidInputError,
    UnknownSweepError,
    interruption,
)
from orchestrator.plan.bisect import AMBIGUOUS, BAD, FOUND, SKIP, BisectSearch, Commit, first_parent_history
from orchestrator.plan.expand import check_writable, resolve_sweep, results_root_for
from orchestrator.plan.refs import repo_root, resolve_ref
from orchestrator.render import bisect_page
from orchestrator.render.markdown import markdown_table
from orchestrator.spec.bisect import CANDIDATE_SIDE, GOOD_SIDE, load_bisect_spec
from orchestrator.spec.load import spec_from_config, spec_to_dict
from orchestrator.spec.schema import SideSpec, SweepSpec
from orchestrator.store import bisects
from orchestrator.store.records import read_record, sweeps_dir
from orchestrator.store.reuse import RunPool


def add_bisect_arguments(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("sweep", nargs="?", type=Path, help="sweep YAML file (one case, one gate)")
    source.add_argument("--resume", metavar="BISECT_ID|latest", help="continue a recorded bisect")
    parser.add_argument("overrides", nargs="*", metavar="KEY=VALUE", help="dotlist overrides, e.g. repeats=5")
    parser.add_argument("--good", metavar="REF",
                        help="a commit whose gate PASSes (the baseline of every step)")
    parser.add_argument("--bad", metavar="REF", help="a later commit whose gate FAILs against --good")
    parser.add_argument("--results", metavar="DIR",
                        help="results root (default: the sweep's results key; with --resume: 'results' in "
                             "the git repo of the current directory)")
    parser.add_argument("--scheduler", metavar="ADDR",
                        help="tcp://HOST:PORT of a Dask scheduler (default: one embedded LocalCluster for "
                             "every step)")
    parser.add_argument("--remeasure-good", action="store_true",
                        help="measure --good again in every step instead of reusing its earlier runs: each "
                             "step's rounds then pair in time, cancelling drift between steps, at about "
                             "twice the runs")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    add_tls_arguments(parser)


@dataclass
class Bisect:
    """A bisect being run: its record (rewritten after every step) and what the record pins."""

    root: Path
    record: dict[str, Any]
    spec: SweepSpec  # sides good (at the good SHA) and cand; repo and results absolute
    commits: list[Commit]

    @property
    def bisect_id(self) -> str:
        return self.record["bisect_id"]

    def save(self) -> None:
        bisects.write_bisect(self.root, self.bisect_id, self.record)

    def index_of(self, sha: str) -> int:
        return [c.sha for c in self.commits].index(sha)


def cmd_bisect(args: argparse.Namespace) -> int:
    job = _resumed(args) if args.resume is not None else _new(args)
    with bisects.bisect_lock(job.root, job.bisect_id):
        return _run(args, job)


def _new(args: argparse.Namespace) -> Bisect:
    """Validate everything, resolve both refs once, list the history, record the bisect."""
    if not args.good or not args.bad:
        raise InvalidInputError("a new bisect needs --good REF and --bad REF", "--good" if not args.good else
                                "--bad")
    overrides = [*args.overrides, *([f"results={args.results}"] if args.results else [])]
    spec = load_bisect_spec(args.sweep, overrides, args.good, args.bad)
    resolved = resolve_sweep(spec, Path.cwd())
    good, bad = resolved.shas[GOOD_SIDE], resolved.shas[CANDIDATE_SIDE]
    commits = first_parent_history(resolved.repo, good, bad)
    spec = replace(spec, repo=str(resolved.repo), results=str(resolved.results_root),
                   sides={GOOD_SIDE: SideSpec(ref=good), CANDIDATE_SIDE: SideSpec(ref=bad)})
    root = resolved.results_root
    created = datetime.now(UTC)
    bisect_id = bisects.reserve_bisect_id(root, spec.name, created)
    record = {"bisect_id": bisect_id, "created": created.isoformat(timespec="seconds"),
              "status": "running", "repo": str(resolved.repo), "results_root": str(root),
              "good_ref": args.good, "bad_ref": args.bad, "good": good, "bad": bad, "first_bad": None,
              "remeasure_good": bool(args.remeasure_good),
              "remaining": [c.sha for c in commits], "skipped": [], "spec": spec_to_dict(spec),
              "commits": [{"sha": c.sha, "subject": c.subject} for c in commits], "steps": []}
    job = Bisect(root=root, record=record, spec=spec, commits=commits)
    job.save()
    print(f"bisect {bisect_id}: {len(commits)} commits after good {good[:12]} up to bad {bad[:12]}, "
          f"results under {root}", flush=True)
    return job


def _resumed(args: argparse.Namespace) -> Bisect:
    """The recorded bisect ``--resume`` names, its repository and SHAs checked."""
    if args.sweep is not None or args.good or args.bad or args.overrides or args.remeasure_good:
        raise InvalidInputError("--resume takes no sweep file, --good, --bad, --remeasure-good or "
                                "overrides: the record has them")
    root = results_root_for(args.results or "results", Path.cwd())
    bisect_id = bisects.latest_bisect_id(root) if args.resume == "latest" else args.resume
    record = bisects.read_bisect(root, bisect_id)
    where = f"cannot resume bisect {bisect_id!r} ({bisects.bisect_path(root, bisect_id)})"
    try:
        spec = spec_from_config(OmegaConf.create(record["spec"]))
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
    print(f"bisect {bisect_id}: resuming ({len(record.get('steps') or [])} steps recorded), "
          f"results under {root}", flush=True)
    return Bisect(root=root, record={**record, "status": "running", "results_root": str(root)}, spec=spec,
                  commits=commits)


def _run(args: argparse.Namespace, job: Bisect) -> int:
    """Preflight, then step until the search concludes; record, print and write the outcome."""
    started = time.monotonic()
    try:
        with _cluster(args.scheduler) as scheduler:
            step_args = argparse.Namespace(**{**vars(args), "scheduler": scheduler})  # TLS options kept
            preflight = _step(job, job.record["bad"], "preflight", step_args)
            if preflight.failure is not None:
                return _finish(job, "failed", started, failure=f"preflight of bad: {preflight.failure}")
            if preflight.mark == SKIP:  # the one commit that cannot be skipped
                reason = f"the bench of --bad {job.record['bad'][:12]} fails ({preflight.reason})"
                return _finish(job, "failed", started, failure=f"{reason}; pick a --bad it runs on")
            if preflight.mark != BAD:
                _finish(job, "no_regression", started)
                raise InvalidInputError(
                    f"--bad {job.record['bad'][:12]} does not FAIL the gate against --good "
                    f"{job.record['good'][:12]} ({preflight.verdict}: {preflight.reason}); nothing to bisect")
            search = BisectSearch(tuple(c.sha for c in job.commits), {job.record["bad"]: BAD})
            search = _replay(job, search)
            while (sha := search.next_commit()) is not None:
                result = _step(job, sha, "step", step_args)
                if result.failure is not None:
                    return _finish(job, "failed", started, failure=f"step {sha[:12]}: {result.failure}")
                search = search.mark(sha, result.mark)
    except InvalidInputError:
        raise
    except KeyboardInterrupt as exc:  # between steps (during a run the dispatcher makes it a cancelled run)
        return _finish(job, "failed", started, failure=interruption(exc))
    except BaseException as exc:
        job.record.update(status="aborted", stopped_reason=f"{type(exc).__name__}: {exc}")
        job.save()
        raise
    conclusion = search.conclusion()
    job.record.update(remaining=list(conclusion.remaining), skipped=list(conclusion.skipped))
    if conclusion.status == FOUND:
        job.record["first_bad"] = conclusion.first_bad
        job.record["first_bad_subject"] = job.commits[job.index_of(conclusion.first_bad)].subject
    return _finish(job, conclusion.status, started)


def _replay(job: Bisect, search: BisectSearch) -> BisectSearch:
    """``search`` with the marks of every step already recorded (a resumed bisect)."""
    for step in job.record["steps"]:
        if step.get("role") == "step" and step.get("mark"):
            search = search.mark(step["sha"], step["mark"])
    return search


def _step(job: Bisect, sha: str, role: str, step_args: argparse.Namespace) -> StepResult:
    """Compare ``sha`` with good: the recorded step if there is one, else its sweep (resumed if a
    killed bisect left it unfinished, started otherwise); the result is recorded at once. The good
    commit's runs of earlier steps are reused (``store.reuse``: good is measured once per round)
    unless the bisect was started with ``--remeasure-good``."""
    recorded = next((s for s in job.record["steps"] if s["sha"] == sha and s.get("mark")), None)
    if recorded is not None:
        print(f"bisect: {sha[:12]} reused from sweep {recorded['sweep_id']}: {recorded['mark']}", flush=True)
        return StepResult(**{k: recorded.get(k) for k in StepResult.__dataclass_fields__})
    name = f"{job.bisect_id}.{sha[:12]}"
    sweep_id = _existing_sweep(job.root, name)
    result = read_step(job.root, sweep_id) if sweep_id else None
    reuse = None if job.record.get("remeasure_good") else RunPool(
        job.root, [s["sweep_id"] for s in job.record["steps"] if s.get("sweep_id") != sweep_id]).reuse
    if sweep_id and result.failure is not None:  # interrupted before it ended: run what is missing
        resume_sweep(step_args, job.root, sweep_id, reuse=reuse)
        result = read_step(job.root, sweep_id)
    if result is None:
        spec = replace(job.spec, name=name,
                       sides={GOOD_SIDE: SideSpec(ref=job.record["good"]), CANDIDATE_SIDE: SideSpec(ref=sha)})
        sweep_id = start_sweep(step_args, resolve_sweep(spec, Path(job.record["repo"])), reuse=reuse)
        result = read_step(job.root, sweep_id)
    subject = job.commits[job.index_of(sha)].subject
    entry = {"role": role, "index": job.index_of(sha), "sha": sha, "subject": subject, **result.to_dict()}
    job.record["steps"] = [s for s in job.record["steps"] if s["sha"] != sha] + [entry]
    job.save()
    print(f"bisect: {role} {sha[:12]} {subject!r}: ratio {_ratio(result)} {result.interval} "
          f"{result.verdict or '-'} -> {result.mark or 'not decided'} ({result.runs} runs; {result.reason})",
          flush=True)
    return result


def _existing_sweep(root: Path, name: str) -> str | None:
    """The latest recorded sweep named ``name`` (a step of this bisect), if any."""
    found = []
    for path in sweeps_dir(root).glob(f"{name}-*.json"):
        try:
            record = read_record(root, path.stem)
        except UnknownSweepError:  # reserved but never written: nothing was dispatched
            continue
        if record.get("spec", {}).get("name") == name:
            found.append((str(record.get("created", "")), path.stem))
    return max(found)[1] if found else None


@contextmanager
def _cluster(scheduler: str | None) -> Iterator[str]:
    """``scheduler``, or the address of one embedded cluster every step of the bisect shares."""
    if scheduler is not None:
        yield scheduler
        return
    from orchestrator.dispatch.cluster import connect  # imports Dask: only when actually running

    with connect(None) as conn:
        yield conn.client.scheduler.address


def _finish(job: Bisect, status: str, started: float, failure: str | None = None) -> int:
    """Record the outcome, print the steps, the answer and one outcome line last; the exit code."""
    job.record.update(status=status, ended=datetime.now(UTC).isoformat(timespec="seconds"),
                      wall_s=round(time.monotonic() - started, 3), stopped_reason=failure)
    job.save()
    print(markdown_table(bisect_page.steps_table(job.record)))
    page = bisect_page.write_bisect_html(job.root, job.record)
    print(f"bisect record: {bisects.bisect_path(job.root, job.bisect_id)}; HTML: {page}")
    skipped = job.record.get("skipped") or []
    if skipped:
        print("skipped (bench failed): " + ", ".join(skipped))
    tested = len({s["sha"] for s in job.record["steps"]} | {job.record["good"]})
    head = f"bisect {job.bisect_id}:"
    if status == FOUND:
        print(f"first bad commit: {job.record['first_bad']}\n    {job.record['first_bad_subject']}")
        print(f"{head} FOUND first bad commit {job.record['first_bad'][:12]} ({tested} SHAs "
              f"benchmarked, good included, {len(skipped)} skipped)")
        return EXIT_OK
    if status == "no_regression":
        return EXIT_INVALID  # the caller raises the error that says why, as the last line
    if status == "failed":
        print(f"{head} FAILED: {failure}; continue with: shasweep bisect --resume {job.bisect_id} "
              f"--results {job.root}")
        return EXIT_RUN_FAILED
    remaining = job.record["remaining"]
    print("remaining: " + ", ".join(remaining))
    why = ("only skipped commits are left to tell apart" if status == AMBIGUOUS
           else "a step stayed INCONCLUSIVE")
    print(f"{head} UNDECIDED ({why}): the first bad commit is one of {len(remaining)} commits "
          f"{remaining[0][:12]}..{remaining[-1][:12]}")
    return EXIT_GATE_INCONCLUSIVE


def _ratio(result: StepResult) -> str:
    return "-" if result.ratio is None else f"{result.ratio:.3f}"
