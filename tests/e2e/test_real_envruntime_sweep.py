"""Real sweeps of this repository's ready YAMLs, at tiny N, through the whole orchestrator path:
``shasweep run`` -> embedded LocalCluster -> a git worktree of HEAD -> ``python -m envruntime.bench``
(real MuJoCo and MotrixSim physics, Numba managers, torch actors) -> Parquet -> report.

Sides measure committed code: these tests run HEAD's envruntime, not the working tree. The module
shares one shasweep home, so every sweep reuses one worktree of HEAD and its Numba cache. The 7-case
sweep runs three of its cases here (every task, both sims, both actors): each bench run costs ~5-25 s
on a 2-core machine (interpreter start, torch import, Numba cache or compile), so all 14 runs would
take minutes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from orchestrator.analysis.report_model import make_report
from orchestrator.analysis.verdicts import Verdict
from orchestrator.cli.main import main
from orchestrator.errors import EXIT_GATE_INCONCLUSIVE, EXIT_OK
from orchestrator.render.markdown import report_markdown

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
TINY = ("params.num_envs=8", "params.warmup=1", "params.measure=3", "params.replay_capacity=8",
        "params.threads=1")
BACKENDS = {"mujoco": "MujocoBackend", "motrix": "MotrixBackend"}
# every task, both sims, both actors; the motion-tracking case is the update_state sweep's, so that
# sweep finds its Numba kernels compiled in the shared worktree
SEVEN_CASE_SUBSET = ("flashsac/go2_joystick_flat/mujoco", "flashsac/g1_walk_flat/motrix",
                     "sac/g1_motion_tracking/mujoco")


@pytest.fixture(scope="module", autouse=True)
def shared_home(tmp_path_factory):
    """Run every sweep from the repo root with one shasweep home (inherited by the bench worker)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SHASWEEP_HOME", str(tmp_path_factory.mktemp("home")))
        patch.chdir(REPO)
        yield


def run_sweep(yaml_name: str, results: Path, planned: int, *overrides: str) -> tuple[int, str, pd.DataFrame]:
    """``shasweep run`` the ready sweep at tiny size and check its ``planned`` runs (``check_runs``);
    returns the exit code, the sweep id and the runs."""
    code = main(["run", f"sweeps/{yaml_name}", f"results={results}", *TINY, *overrides, "--no-progress"])
    (record_path,) = (results / "sweeps").glob("*.json")
    record = json.loads(record_path.read_text())
    assert record["status"] == "finished", record.get("stopped_reason")
    assert {o["status"] for o in record["outcomes"]} == {"ok"}, record["outcomes"]
    (head,) = {side["sha"] for side in record["sides"].values()}  # every side is at HEAD
    # file by file: the direct envs do not time the managers' sub-phases, and a directory read takes the
    # columns of whichever file comes first
    runs = pd.concat([pd.read_parquet(f) for f in (results / "runs").rglob("*.parquet")], ignore_index=True)
    check_runs(runs, head, results, planned)
    return code, record["sweep_id"], runs


def check_runs(runs: pd.DataFrame, head: str, results: Path, planned: int) -> None:
    """Every planned run is ok, ran HEAD's code on the requested backend, and streamed its steps."""
    assert len(runs) == planned and (runs["status"] == "ok").all()
    assert (runs["sha"] == head).all() and (runs["audit_git_sha"] == head).all()
    loaded = runs["audit_backend_class"].str.rsplit(".", n=1).str[-1]
    assert (loaded == runs["sim"].map(BACKENDS)).all()
    assert (runs["throughput"] > 0).all() and (runs["physics_ms"] > 0).all()
    steps = pd.read_parquet(results / "steps")
    measured = steps[~steps["warmup"]].groupby("run_key")["step"].nunique()
    assert measured.to_dict() == dict.fromkeys(runs["run_key"], 3)


def test_smoke_sweep_passes_its_gate(tmp_path):
    # 3 rounds: a t-interval from 2 (1 degree of freedom) is too wide for tiny, noisy runs to decide;
    # one measured block of 3 steps a side per lockstep round (check_runs counts 3 measured steps)
    code, sweep_id, runs = run_sweep("smoke.yaml", tmp_path, 6, "repeats=3", "lockstep.blocks=1",
                                     "lockstep.block_steps=3",
                                     "gates=[{metric: throughput, min_ratio: 0.01}]")
    assert (runs["ran_in"] == "lockstep").all(), "smoke's rounds run both sides' processes at once"
    assert sorted(runs.groupby("repeat")["side"].apply(sorted).tolist()) == [["direct", "manager"]] * 3
    assert runs["kernel_threads"].between(1.0, 1.0).all(), "params.threads=1: the kernels' one rung"
    assert (runs["variant"] == runs["side"]).all(), "smoke's side labels are the variants they run"
    assert runs.loc[runs["variant"] == "manager", "update_state.command.compute_ms"].notna().all()
    report = make_report(tmp_path, sweep_id)
    assert [g.verdict for g in report.gates] == [Verdict.PASS] and code == EXIT_OK == report.exit_code
    assert (tmp_path / "reports" / f"{sweep_id}.html").is_file()


def test_seven_case_sweep_runs_its_cases_on_both_variants(tmp_path):
    code, sweep_id, runs = run_sweep("mba_vs_direct_7case.yaml", tmp_path, 6, "repeats=1", "max_repeats=1",
                                     f"cases=[{','.join(SEVEN_CASE_SUBSET)}]")
    report = make_report(tmp_path, sweep_id)
    assert report.cases == list(SEVEN_CASE_SUBSET) and set(runs["case"]) == set(SEVEN_CASE_SUBSET)
    assert runs.sort_values("order")["side"].tolist() == ["direct", "mba"] * 3, "one round, interleaved"
    assert (runs["variant"] == runs["side"].map({"direct": "direct", "mba": "manager"})).all()
    assert (runs["policy_ms"] == 0.0).all(), "params.actions=pregenerated reached every bench"
    markdown = report_markdown(report)
    assert all(f"## {case}" in markdown for case in report.cases)
    assert len(report.gates) == 3, "one throughput verdict per case"
    assert {g.verdict for g in report.gates} == {Verdict.INCONCLUSIVE}, "one run per side cannot decide"
    assert code == EXIT_GATE_INCONCLUSIVE


def test_update_state_sweep_reports_the_command_and_observation_sub_phases(tmp_path):
    code, sweep_id, _ = run_sweep("update_state_numba.yaml", tmp_path, 2, "repeats=1", "max_repeats=1")
    report = make_report(tmp_path, sweep_id)
    sub_phases = [m for m in report.metrics if m.startswith("update_state.")]
    assert len(sub_phases) == 3
    for row in (r for r in report.rows if r.metric in sub_phases):
        assert row.summary.n == 1 and row.summary.median >= 0, row
    assert "not reported" not in report_markdown(report)
    assert code == EXIT_GATE_INCONCLUSIVE == report.exit_code
