"""The sweep session (``orchestrator.session``): a sweep run and read from Python alone, as a notebook
does, on a real embedded cluster with the fake bench at two commits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from fakebench.fakerepo import COMMAND

from orchestrator.analysis.verdicts import Verdict
from orchestrator.spec.deprecated import DEPRECATED_KEYS
from orchestrator.spec.schema import SweepSpec

FINISHED = Path(__file__).resolve().parents[1] / "data" / "records" / "today" / "fake-ab-20261201T192304.json"
SWEEP = {"name": "nb", "sides": {"old": {"ref": "HEAD~1"}, "new": {"ref": "HEAD"}}, "baseline": "old",
         "cases": ["sac/fake/none"], "known": {"tasks": [], "sims": []}, "command": list(COMMAND),
         "params": {"num_envs": 8, "warmup": 1, "measure": 4, "threads": 1}, "repeats": 2, "timeout_s": 60,
         "gates": [{"metric": "physics_ms", "max_ratio": 0.6}]}


@pytest.fixture
def sweep_yaml(repo, monkeypatch) -> Path:
    monkeypatch.chdir(repo.path)
    path = repo.path / "sweep.yaml"
    path.write_text(yaml.safe_dump(SWEEP, sort_keys=False))
    return path


@pytest.mark.slow
def test_a_notebook_runs_a_sweep_and_reads_its_report(repo, sweep_yaml):
    from orchestrator.session import RunOptions, plan_sweep, run_sweep

    plan = plan_sweep("sweep.yaml", ["repeats=3"])
    run = run_sweep(plan, RunOptions(progress=False))
    report = run.report()
    verdicts = [(g.metric, g.side, g.verdict, round(g.ratio, 3)) for g in report.gates]

    assert verdicts == [("physics_ms", "new", Verdict.PASS, 0.5)], "the fake bench: 2 ms against 4 ms steps"
    assert report.exit_code == 0 and report.counts["sac/fake/none", "new"] == (3, 0)
    assert plan.resolved.shas == {"old": repo.shas[0], "new": repo.shas[1]} and len(plan.runs) == 6
    record = run.record()
    assert record.status == "finished" and [o.status for o in record.outcomes] == ["ok"] * 6
    written = json.loads((run.results_root / "sweeps" / f"{run.sweep_id}.json").read_text())
    today = json.loads(FINISHED.read_text())  # written before records had a creation number
    keys = list(today)
    keys.insert(keys.index("created") + 1, "sequence")
    keys.insert(0, "format_version")  # added since; requeued_rounds is now written only when a round was
    keys = [key for key in keys if key != "requeued_rounds" or key in written]  # run again
    assert list(written) == keys, "a finished record has today's keys, in their order"
    assert written["sequence"] == 1, "the first record of its results root"
    assert [k for k in written["spec"] if k in today["spec"]] == [
        k for k in today["spec"] if k not in DEPRECATED_KEYS], "today's spec keys, in order, new ones added"


@pytest.mark.slow
def test_an_adaptive_sweep_that_ran_extra_rounds_can_be_resumed(repo, sweep_yaml):
    """Its finished record plans more runs than it did at the start; the digest follows, so a resume
    replays the rounds' decisions instead of refusing the record."""
    from orchestrator.session import RunOptions, plan_sweep, resume, run_sweep

    undecidable = ["max_repeats=3", "sides.new.ref=HEAD~1",
                   "gates=[{metric: throughput, min_ratio: 0.999, max_ratio: 1.001, confidence: 0.99999}]"]
    run = run_sweep(plan_sweep(sweep_yaml, undecidable), RunOptions(progress=False))
    first = run.record()
    assert first.planned_runs == 6 and first.adaptive.ended == "max_repeats reached"

    again = resume(run.sweep_id, run.results_root, RunOptions(progress=False))
    record = again.record()
    assert again.sweep_id == run.sweep_id and record.status == "finished" and len(record.resumed) == 1
    assert [o.run_key for o in record.outcomes] == [o.run_key for o in first.outcomes], "nothing run twice"
    assert resume("latest", run.results_root, RunOptions(progress=False)).record().resumed[1:]


def test_a_plan_from_a_spec_object_takes_overrides_and_writes_nothing(repo, sweep_yaml):
    from orchestrator.session import plan_sweep

    spec = plan_sweep(sweep_yaml).spec
    assert isinstance(spec, SweepSpec)
    plan = plan_sweep(spec, ["repeats=1"], cwd=repo.path)
    assert plan.spec.repeats == 1 and len(plan.runs) == 2 and plan.resolved.sweep_dir is None
    assert not (repo.path / "results").exists()


def test_work_while_connecting_ends_before_the_first_run_starts(repo, sweep_yaml):
    """``RunOptions.while_connecting`` runs beside the cluster's start and is joined before any run is
    dispatched: it never shares the CPUs with a bench."""
    import threading
    import time
    from datetime import UTC, datetime

    from orchestrator.session import RunOptions, plan_sweep, run_sweep
    from orchestrator.store import query

    seen: dict[str, object] = {}

    def work() -> None:
        seen["thread"] = threading.current_thread() is not threading.main_thread()
        time.sleep(3.0)  # longer than the embedded cluster takes to start
        seen["ended"] = datetime.now(UTC)

    options = RunOptions(progress=False, while_connecting=work)
    run = run_sweep(plan_sweep("sweep.yaml", ["repeats=1"]), options)
    first = query.read_runs(run.results_root, query.Where(sweeps=[run.sweep_id]), ["started_at"])
    assert seen["thread"] is True
    assert first["started_at"].min() > seen["ended"]
