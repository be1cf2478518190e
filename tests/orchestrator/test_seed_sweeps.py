"""The two ready sweeps of the seeds (sweeps/mba_vs_direct_7case.yaml, sweeps/update_state_numba.yaml)
parse, validate and plan as documented, through ``load_spec`` + ``build_plan`` and ``shasweep plan``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from orchestrator.cli.main import main
from orchestrator.plan.expand import build_plan, resolve_sweep
from orchestrator.spec.load import load_spec
from orchestrator.spec.schema import Order

REPO = Path(__file__).resolve().parents[2]
SEVEN = REPO / "sweeps" / "mba_vs_direct_7case.yaml"
UPDATE_STATE = REPO / "sweeps" / "update_state_numba.yaml"
SEVEN_CASES = [
    "flashsac/go2_joystick_flat/mujoco", "flashsac/g1_walk_flat/mujoco", "flashsac/g1_walk_flat/motrix",
    "sac/g1_walk_flat/mujoco", "sac/g1_walk_flat/motrix",
    "sac/g1_motion_tracking/mujoco", "sac/g1_motion_tracking/motrix",
]
SUB_PHASES = ["update_state.command.compute_ms", "update_state.command.post_compute_ms",
              "update_state.observation.compute_ms"]
SHA = re.compile(r"[0-9a-f]{40}\Z")


def plan(path: Path, tmp_path: Path, *dotlist: str):
    resolved = resolve_sweep(load_spec(path, [f"results={tmp_path}", *dotlist]), REPO)
    return resolved, build_plan(resolved, "seed-20260101T000000")


def test_seven_cases_interleaved_direct_and_mba_at_head_adaptive_to_10_rounds(tmp_path):
    resolved, runs = plan(SEVEN, tmp_path)
    spec = resolved.spec
    assert spec.cases == SEVEN_CASES and spec.baseline == "direct" and list(spec.sides) == ["direct", "mba"]
    assert {s: v.variant for s, v in resolved.settings.items()} == {"direct": "direct", "mba": "manager"}
    head = resolved.shas["direct"]
    assert {s.ref for s in spec.sides.values()} == {"HEAD"}
    assert resolved.shas["mba"] == head and SHA.match(head)
    p = spec.params
    assert ([p[k] for k in ("num_envs", "warmup", "measure", "replay_capacity")], spec.repeats) == (
        [8192, 10, 100, 64], 3)
    assert spec.order is Order.interleaved and spec.timeout_s >= 1800
    assert (spec.max_repeats, spec.budget_s) == (10, 14400)
    assert p["actions"] == "pregenerated", "the original measurement's collector method"
    assert [(g.metric, g.min_ratio, g.max_ratio, g.side, g.case) for g in spec.gates] == [
        ("throughput", 0.90, None, None, None)]

    assert len(runs) == 7 * 2 * 3 and [r.order for r in runs] == list(range(42))
    expected = [(case, side, rep) for rep in range(3) for case in SEVEN_CASES for side in ("direct", "mba")]
    assert [(r.case, r.side, r.repeat) for r in runs] == expected
    _, serial = plan(SEVEN, tmp_path, "order=serial", "max_repeats=3")  # the seed's order, as documented
    assert [(r.case, r.side, r.repeat) for r in serial] == [
        (case, side, rep) for case in SEVEN_CASES for side in ("direct", "mba") for rep in range(3)]
    assert all(r.variant == resolved.settings[r.side].variant and r.sha == head for r in runs)
    assert all(("--actions", "{actions}") == r.argv_template[-4:-2] for r in runs)
    assert len({r.run_key for r in runs}) == 42


def test_seven_case_sides_take_a_branch_from_the_command_line(tmp_path):
    # another spelling of HEAD stands in for a branch: a shallow CI clone may hold no other commit
    resolved, runs = plan(SEVEN, tmp_path, "sides.mba.ref=HEAD^{commit}", "cases=[sac/g1_walk_flat/motrix]",
                          "repeats=1")
    assert resolved.shas["mba"] == resolved.shas["direct"]
    assert [(r.side, r.ref) for r in runs] == [("direct", "HEAD"), ("mba", "HEAD^{commit}")]


def test_update_state_sweep_interleaves_two_refs_and_reports_the_sub_phases(tmp_path):
    resolved, runs = plan(UPDATE_STATE, tmp_path)
    spec = resolved.spec
    assert spec.cases == ["sac/g1_motion_tracking/mujoco"] and spec.baseline == "before"
    assert [s.ref for s in spec.sides.values()] == ["HEAD", "HEAD"], "a template: resolves in any clone"
    assert resolved.shas["before"] == resolved.shas["after"]
    assert {s.variant for s in resolved.settings.values()} == {"manager"}
    assert spec.order is Order.interleaved and spec.repeats == 3 and spec.max_repeats == 15
    assert [(r.side, r.repeat) for r in runs] == [(s, i) for i in range(3) for s in ("before", "after")]
    assert spec.metrics[:3] == ["throughput", "physics_ms", "update_state_ms"]
    assert set(SUB_PHASES) <= set(spec.metrics)
    assert {g.metric for g in spec.gates} == {"update_state_ms", "throughput"}


@pytest.mark.parametrize(("path", "runs"), [(SEVEN, 42), (UPDATE_STATE, 6)])
def test_shasweep_plan_prints_every_run(path, runs, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    assert main(["plan", str(path), f"results={tmp_path}"]) == 0
    out = capsys.readouterr().out
    assert f": {runs} runs (" in out and out.count(" HEAD = ") == 2
    run_lines = [line.split() for line in out.splitlines() if re.match(r"\s*\d+\s", line)]
    assert [int(cols[0]) for cols in run_lines] == list(range(runs))
