"""Resume planning: recorded SHAs and run keys, what is left to run, outcome merging, the sweep lock."""

from __future__ import annotations

from datetime import UTC, datetime

import pandas as pd
import pytest
import yaml
from fakebench.fakerepo import COMMAND, git, make_fake_repo

from orchestrator.contract import RunResult
from orchestrator.errors import InvalidInputError
from orchestrator.plan.expand import build_plan, resolve_sweep
from orchestrator.plan.lifecycle import new_record
from orchestrator.plan.resume import plan_resume
from orchestrator.spec.load import load_spec
from orchestrator.store import records as sweep_record
from orchestrator.store.parquet import runs_dir, write_run
from orchestrator.store.query import run_statuses

SWEEP = {
    "name": "resume", "sides": {"old": {"ref": "HEAD~1"}, "new": {"ref": "HEAD"}}, "baseline": "old",
    "cases": ["sac/fake/none"], "known": {"tasks": [], "sims": []}, "command": list(COMMAND),
    "params": {"num_envs": 8, "warmup": 0, "measure": 2, "threads": 1}, "repeats": 2,
}


@pytest.fixture
def recorded(tmp_path):
    """A fake repo and a recorded sweep of it (4 runs) whose first run is ok and second failed."""
    repo = make_fake_repo(tmp_path)
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(SWEEP, sort_keys=False))
    resolved = resolve_sweep(load_spec(path), repo.path)
    created = datetime.now(UTC)
    sweep_id = sweep_record.reserve_sweep_id(resolved.results_root, "resume", created)
    runs = build_plan(resolved, sweep_id)
    sweep_record.write_record(resolved.results_root,
                              new_record(resolved, sweep_id, created, len(runs)))
    for run, status in zip(runs, ("ok", "failed"), strict=False):
        write_run(run, RunResult(status=status, error=None, started_at=created, ended_at=created,
                                 exit_code=0, log_dir=""))
    return repo, resolved.results_root, sweep_id, runs


def test_resume_keeps_recorded_shas_and_run_keys_and_skips_ok_runs(recorded):
    repo, root, sweep_id, runs = recorded
    (repo.path / "moved.txt").write_text("the branch moves on\n")
    git(repo.path, "add", "moved.txt")
    git(repo.path, "commit", "-q", "-m", "move HEAD")

    plan = plan_resume(root, sweep_id)
    assert plan.resolved.shas == {"old": repo.shas[0], "new": repo.shas[1]}, "refs are not resolved again"
    assert [r.run_key for r in plan.runs] == [r.run_key for r in runs]
    assert plan.statuses == {runs[0].run_key: "ok", runs[1].run_key: "failed"}
    assert plan.todo == runs[1:], "every run not recorded ok, in plan order"


def test_merge_completes_the_outcome_in_plan_order(recorded):
    _, root, sweep_id, runs = recorded
    plan = plan_resume(root, sweep_id)
    again = [r.outcome(status="ok") for r in plan.todo]
    merged = plan.merged_outcomes(again)
    assert [o.run_key for o in merged] == [r.run_key for r in runs]
    assert merged[0] == runs[0].outcome(status="ok") and (merged[0].order, merged[0].side) == (0, "old")
    assert merged[1:] == again


def test_unreadable_and_temporary_files(recorded):
    _, root, sweep_id, runs = recorded
    partition = runs_dir(root, sweep_id)
    (partition / f".{runs[3].run_key}.parquet.123.tmp").write_bytes(b"half written")
    assert len(pd.read_parquet(partition.parent)) == 2, "pandas does not see a temporary file"
    (partition / f"{runs[2].run_key}.parquet").write_bytes(b"PAR1 cut short")
    assert run_statuses(root, sweep_id) == {runs[0].run_key: "ok", runs[1].run_key: "failed",
                                            runs[2].run_key: None}
    assert plan_resume(root, sweep_id).todo == runs[1:], "an unreadable run file is run again"


def test_results_of_another_plan_are_refused(recorded):
    _, root, sweep_id, runs = recorded
    (runs_dir(root, sweep_id) / "0123456789abcdef0123.parquet").write_bytes(b"stray")
    with pytest.raises(InvalidInputError, match="run keys 0123456789abcdef0123 were recorded but are not"):
        plan_resume(root, sweep_id)


@pytest.mark.slow
def test_a_sweep_being_dispatched_cannot_be_resumed(recorded):
    _, root, sweep_id, _ = recorded
    with sweep_record.sweep_lock(root, sweep_id):
        with pytest.raises(InvalidInputError, match=f"sweep '{sweep_id}' is being run by another"):
            with sweep_record.sweep_lock(root, sweep_id):
                pass
    with sweep_record.sweep_lock(root, sweep_id):  # released: free again
        pass
