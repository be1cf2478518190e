"""Planning an adaptive sweep: the first rounds, the rounds it may add, and what ``plan`` prints."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from fakebench.fakerepo import make_fake_repo

from orchestrator.cli.main import main
from orchestrator.plan.expand import adaptive_plan, build_plan, max_repeats, resolve_sweep
from orchestrator.spec.load import load_spec

SWEEP = {"name": "ad", "sides": {"a": {"ref": "HEAD~1"}, "b": {"ref": "HEAD"}}, "baseline": "a",
         "cases": ["sac/go2_joystick_flat/mujoco", "sac/g1_walk_flat/mujoco"], "repeats": 2,
         "gates": [{"metric": "throughput", "min_ratio": 0.97}]}


@pytest.fixture
def sweep_file(tmp_path, monkeypatch):
    repo = make_fake_repo(tmp_path)
    monkeypatch.chdir(repo.path)
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(SWEEP))
    return path


@pytest.mark.parametrize("order", ["interleaved", "randomized", "serial"])
def test_the_added_rounds_extend_the_design_round_by_round(sweep_file, order):
    resolved = resolve_sweep(load_spec(sweep_file, [f"order={order}", "max_repeats=5"]), Path.cwd())
    first, extra = build_plan(resolved, "ad-1"), adaptive_plan(resolved, "ad-1")
    assert max_repeats(resolved.spec) == 5 and len(first) == 2 * 2 * 2 and len(extra) == 2 * 2 * 3
    assert [r.repeat for r in extra] == sorted(r.repeat for r in extra), "round by round"
    assert [r.order for r in first + extra] == list(range(len(first) + len(extra)))
    keys = {r.run_key for r in first + extra}
    assert len(keys) == len(first) + len(extra)
    again = adaptive_plan(resolve_sweep(load_spec(sweep_file, [f"order={order}", "max_repeats=5"]),
                                        Path.cwd()), "ad-1")
    assert [r.run_key for r in again] == [r.run_key for r in extra], "deterministic: resume finds them"
    fixed = resolve_sweep(load_spec(sweep_file, [f"order={order}"]), Path.cwd())
    assert [r.run_key for r in build_plan(fixed, "ad-1")] == [r.run_key for r in first]
    assert adaptive_plan(fixed, "ad-1") == [] and max_repeats(fixed.spec) == 2


def test_plan_prints_min_and_max_runs(sweep_file, capsys):
    assert main(["plan", str(sweep_file), "max_repeats=10", "budget_s=600"]) == 0
    out = capsys.readouterr().out
    assert "adaptive: min 8 runs, max 40 runs" in out and "max_repeats=10" in out and "budget_s=600" in out
    assert main(["plan", str(sweep_file)]) == 0
    assert "adaptive:" not in capsys.readouterr().out, "a fixed sweep by default"
