"""Audit verdicts per run, and how the report counts a run that fails its audit."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from test_report import GO2, SHAS, write_go2_runs, write_run, write_sweep

from orchestrator.analysis.legacy_audit import AUDIT_FAILED, apply_audit
from orchestrator.analysis.report_model import make_report
from orchestrator.contract import PlannedRun, StepRecord
from orchestrator.errors import EXIT_RUN_FAILED
from orchestrator.render.markdown import report_markdown
from orchestrator.spec.record import SweepRecord
from orchestrator.store.step_log import StepLog
from orchestrator.worker.run_audit import ENVRUNTIME_MANAGERS, header_bool_reasons, numbers_reasons
from orchestrator.worker.run_audit import audit_row as audit_run

PARAMS = {"num_envs": 64, "warmup": 2, "measure": 5}
PLANNED = {"ref": "main", "sha": "a" * 40, "variant": "manager", "params": PARAMS, "env": {}}


def envruntime_run(**changes) -> dict:
    """A runs-table row of an envruntime MuJoCo manager run that passes every check."""
    return {"sha": "a" * 40, "sim": "mujoco", "variant": "manager", "params": json.dumps(PARAMS),
            "env": "{}", "steps": 5, "audit_git_sha": "a" * 40,
            "audit_env_class": "envruntime.envs.manager_based.ManagerBasedEnv",
            "audit_backend_class": "envruntime.backends.mujoco_backend.MujocoBackend",
            "audit_managers": json.dumps(list(ENVRUNTIME_MANAGERS)), **changes}


def test_a_faithful_run_passes():
    assert audit_run(envruntime_run(), PLANNED) == []
    direct = envruntime_run(variant="direct", audit_managers="[]")
    assert audit_run(direct, {**PLANNED, "variant": "direct"}) == []


@pytest.mark.parametrize("changes, planned, expected", [
    ({"audit_git_sha": "c" * 40}, {}, f"loaded SHA {'c' * 40} is not the requested {'a' * 40}"),
    ({"audit_git_sha": None}, {}, "audit records no git_sha"),
    ({"sim": "motrix"}, {}, "sim 'motrix' ran on backend envruntime.backends.mujoco_backend.MujocoBackend"),
    ({"sim": "bullet"}, {}, "sim 'bullet' has no envruntime backend"),
    ({"audit_managers": '["action", "reward", "observation", "termination"]'}, {},
     "manager variant built action, reward, observation, termination; missing event, command"),
    ({"audit_managers": None}, {}, "built no managers"),
    ({"variant": "direct", "audit_managers": "[]"}, PLANNED, "variant 'direct' is not the sweep's 'manager'"),
    ({"params": json.dumps({**PARAMS, "num_envs": 8})}, PLANNED, "params.num_envs 8 is not the sweep's 64"),
    ({"env": '{"OMP_NUM_THREADS": "8"}'}, PLANNED, "env.OMP_NUM_THREADS '8' is not the sweep's 'unset'"),
    ({"steps": 3}, {}, "measured 3 steps, params.measure asked for 5"),
])
def test_each_check_names_what_is_wrong(changes, planned, expected):
    reasons = audit_run(envruntime_run(**changes), planned)
    assert len(reasons) == 1 and expected in reasons[0], reasons


@pytest.mark.parametrize("backend", ["envruntime.backends.motrix_backend.MotrixBackend",
                                     "envruntime.backends.motrix.backend.MotrixBackend"])
def test_the_backend_module_may_move_between_shas(backend):
    """The MotrixSim backend moved into a folder; SHAs on both sides of that move pass."""
    assert audit_run(envruntime_run(sim="motrix", audit_backend_class=backend), PLANNED) == []
    elsewhere = envruntime_run(sim="motrix", audit_backend_class="mypkg.MotrixBackend")
    assert "instead of envruntime.backends.*.MotrixBackend" in audit_run(elsewhere, PLANNED)[0]


def test_other_benches_get_only_the_generic_checks():
    fake = envruntime_run(audit_env_class="FakeEnv", sim="none", audit_backend_class=None,
                          audit_managers='["action"]')
    assert audit_run(fake, PLANNED) == []
    assert audit_run({**fake, "audit_git_sha": "b" * 40}, PLANNED) != []


def test_apply_audit_marks_only_ok_runs():
    runs = pd.DataFrame([{**envruntime_run(), "side": "a", "status": "ok", "error": None},
                         {**envruntime_run(sim="motrix"), "side": "a", "status": "ok", "error": None},
                         {**envruntime_run(sim="motrix"), "side": "a", "status": "timeout", "error": "slow"}])
    spec = {"name": "s", "sides": {"a": {"ref": "HEAD"}}, "baseline": "a", "cases": [GO2]}
    record = SweepRecord.from_json({"sweep_id": "s", "planned_runs": 3, "spec": spec,
                                    "sides": {"a": PLANNED}})
    audited = apply_audit(runs, record)
    assert audited["status"].tolist() == ["ok", AUDIT_FAILED, "timeout"]
    assert audited["error"][1].startswith("audit: sim 'motrix'") and audited["error"][2] == "slow"
    assert runs["status"].tolist() == ["ok", "ok", "timeout"], "the input frame is left as it was"


def test_report_counts_an_audit_failure_as_a_failed_run(tmp_path):
    sweep = "ab-20260101T000000"
    write_sweep(tmp_path, sweep, [{"metric": "throughput", "min_ratio": 1.5}], [GO2])
    write_go2_runs(tmp_path, sweep)
    # a fourth candidate run that loaded the baseline's code: its huge throughput must not count
    write_run(tmp_path, sweep, "c3", "cand", GO2, throughput=1e9, physics_ms=5.0, audit_git_sha=SHAS["base"])
    report = make_report(tmp_path, sweep)
    tp = {r.side: r.summary for r in report.rows if r.metric == "throughput"}
    assert (tp["cand"].n, tp["cand"].max) == (3, 220.0)
    assert report.counts[GO2, "cand"] == (3, 1)
    assert report.failures.set_index("run_key").loc["c3", "status"] == AUDIT_FAILED
    assert report.exit_code == EXIT_RUN_FAILED
    md = report_markdown(report)
    assert "(1 failed their audit)" in md
    assert f"| c3 | {GO2} | cand | audit_failed | audit: loaded SHA {SHAS['base']}" in md


def _steps(ms: float, n: int, warmup: int = 1) -> StepLog:
    phases = {"collector_step_ms": ms, "physics_ms": ms / 2}
    return StepLog(StepRecord(step=i, warmup=i < warmup, phases=phases) for i in range(warmup + n))


def test_summary_numbers_are_cross_checked():
    steps = _steps(10.0, 4)  # 4 measured steps of at least 10 ms: at most 64 x 4 / 0.04 s = 6400/s
    assert numbers_reasons({"throughput": 6000.0, "measure_wall_s": 64 * 4 / 6000.0}, steps, 64) == []
    assert numbers_reasons({"throughput": 6000.0 * 1.04, "measure_wall_s": 64 * 4 / 6000.0}, steps, 64) == []
    window = numbers_reasons({"throughput": 6000.0, "measure_wall_s": 64 * 4 / 5000.0}, steps, 64)
    assert len(window) == 1 and "6000 disagrees with num_envs 64 x 4 measured steps" in window[0]
    assert "= 5000" in window[0]
    fast = numbers_reasons({"throughput": 60000.0, "measure_wall_s": 64 * 4 / 60000.0}, steps, 64)
    assert len(fast) == 1 and "exceeds 6400, the most the step timings allow" in fast[0]
    assert "without a positive measure_wall_s" in numbers_reasons({"throughput": 1.0}, steps, 64)[0]
    assert numbers_reasons(None, steps, 64) == []
    assert numbers_reasons({"throughput": 1.0}, StepLog(), 64) == []


@pytest.mark.parametrize("reported, reasons", [
    ({"fast": False, "slow": True}, 0),
    ({"fast": "false", "slow": "ON"}, 0),  # a bench that kept its argv's words spelled the same bools
    ({"slow": True}, 0),  # a param the header does not report is not the header's to contradict
    ({"fast": True, "slow": True}, 1),
    ({"fast": "False", "slow": 0}, 1),
    ({"fast": None, "slow": "maybe"}, 2),
])
def test_a_bool_param_passed_to_the_bench_must_come_back_the_same(reported, reasons):
    run = PlannedRun(sweep_id="s", run_key="k", order=0, side="a", ref="HEAD", sha="a" * 40, case="c",
                     algo=None, task=None, sim=None, variant="manager", repeat=0, repo="/r",
                     argv_template=("bench", "--fast", "{fast}", "--slow={slow}"),
                     params={"fast": False, "slow": True, "quiet": False})
    found = header_bool_reasons(run, {"params": {**reported, "quiet": True}})  # quiet is never passed
    assert len(found) == reasons, found
