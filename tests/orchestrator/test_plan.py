"""Plan expansion: orders, counts, run keys and the PlannedRun fields (no git needed)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from orchestrator.plan.expand import ResolvedSweep, build_plan, plan_cells
from orchestrator.spec.load import side_settings, validate
from orchestrator.spec.schema import Order, ParamsSpec, SideSpec, SweepSpec

CASES = ["sac/go2_joystick_flat/mujoco", "sac/g1_walk_flat/mujoco"]
SIDES = ["a", "b"]


def test_interleaved_alternates_sides_within_each_case_round_by_round():
    cells = plan_cells(CASES, SIDES, 2, Order.interleaved, seed=0)
    c0, c1 = CASES
    assert cells == [(c0, "a", 0), (c0, "b", 0), (c1, "a", 0), (c1, "b", 0),
                     (c0, "a", 1), (c0, "b", 1), (c1, "a", 1), (c1, "b", 1)]


def test_serial_runs_every_repeat_of_a_side_in_a_row():
    cells = plan_cells(CASES[:1], SIDES, 3, Order.serial, seed=0)
    assert [side for _, side, _ in cells] == ["a", "a", "a", "b", "b", "b"]
    assert [rep for _, _, rep in cells] == [0, 1, 2, 0, 1, 2]


def test_randomized_is_a_seeded_block_design():
    repeats = 6
    cells = plan_cells(CASES, SIDES, repeats, Order.randomized, seed=7)
    assert cells == plan_cells(CASES, SIDES, repeats, Order.randomized, seed=7), "same seed, same plan"
    assert cells != plan_cells(CASES, SIDES, repeats, Order.randomized, seed=8), "seed changes the plan"
    block = len(CASES) * len(SIDES)
    rounds = [cells[i:i + block] for i in range(0, len(cells), block)]
    all_cells = {(c, s) for c in CASES for s in SIDES}
    for r, round_cells in enumerate(rounds):
        assert {(c, s) for c, s, _ in round_cells} == all_cells, "each round holds every cell once"
        assert {rep for _, _, rep in round_cells} == {r}
    assert len({tuple(rc[:2] for rc in rnd) for rnd in rounds}) > 1, "rounds are shuffled independently"


@pytest.mark.parametrize("order", list(Order))
def test_every_order_plans_each_cell_exactly_repeats_times(order):
    cells = plan_cells(CASES, SIDES + ["c"], 4, order, seed=1)
    assert len(cells) == len(set(cells)) == 2 * 3 * 4
    assert set(Counter((c, s) for c, s, _ in cells).values()) == {4}


def _resolved(tmp_path: Path, num_envs: int = 64) -> ResolvedSweep:
    spec = SweepSpec(name="t", sides={"direct": SideSpec(ref="HEAD", overrides=["variant=direct", "env.X=1"]),
                                      "mba": SideSpec(ref="main", overrides=["params.num_envs=32"])},
                     baseline="mba", cases=list(CASES), repeats=2, env={"BASE": "y"},
                     params=ParamsSpec(num_envs=num_envs, warmup=1, measure=2))
    validate(spec)
    return ResolvedSweep(spec=spec, repo=tmp_path, results_root=tmp_path / "results",
                         shas={"direct": "1" * 40, "mba": "2" * 40},
                         settings={label: side_settings(spec, label) for label in spec.sides})


def test_build_plan_fills_runs_from_side_settings(tmp_path):
    runs = build_plan(_resolved(tmp_path), "t-20260101T000000")
    assert [r.order for r in runs] == list(range(8))
    direct = next(r for r in runs if r.side == "direct")
    mba = next(r for r in runs if r.side == "mba")
    assert (direct.variant, direct.params["num_envs"], direct.env) == ("direct", 64, {"BASE": "y", "X": "1"})
    assert (mba.variant, mba.params["num_envs"], mba.env) == ("manager", 32, {"BASE": "y"})
    assert (direct.sha, direct.ref, mba.sha, mba.ref) == ("1" * 40, "HEAD", "2" * 40, "main")
    assert (direct.algo, direct.task, direct.sim) == ("sac", "go2_joystick_flat", "mujoco")
    assert direct.argv_template[0] == "{python}" and "{stream}" in direct.argv_template
    assert direct.results_root == str(tmp_path / "results") and direct.repo == str(tmp_path)


def test_run_keys_are_unique_and_deterministic(tmp_path):
    runs = build_plan(_resolved(tmp_path), "t-20260101T000000")
    again = build_plan(_resolved(tmp_path), "t-20260101T000000")
    assert len({r.run_key for r in runs}) == len(runs)
    assert [r.run_key for r in runs] == [r.run_key for r in again]
    other_sweep = build_plan(_resolved(tmp_path), "t-20260101T000001")
    assert not {r.run_key for r in runs} & {r.run_key for r in other_sweep}
    other_params = build_plan(_resolved(tmp_path, num_envs=16), "t-20260101T000000")
    changed = {r.run_key for r in runs if r.side == "direct"}  # mba overrides num_envs itself
    assert not changed & {r.run_key for r in other_params}
