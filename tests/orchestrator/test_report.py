"""The report on a hand-made results root (pyarrow files in the documented runs schema)."""

from __future__ import annotations

import math
from dataclasses import replace

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from orchestrator.analysis.report_model import make_report
from orchestrator.analysis.verdicts import Verdict
from orchestrator.cli.main import main
from orchestrator.errors import (
    EXIT_GATE_FAILED,
    EXIT_GATE_INCONCLUSIVE,
    EXIT_INVALID,
    EXIT_OK,
    EXIT_RUN_FAILED,
)
from orchestrator.render.markdown import report_markdown
from orchestrator.spec.record import SweepRecord
from orchestrator.spec.schema import SideSpec
from orchestrator.store.records import latest_sweep_id, read_record, write_record

GO2, G1 = "sac/go2_joystick_flat/mujoco", "sac/g1_walk_flat/mujoco"
SHAS = {"base": "a" * 40, "cand": "b" * 40}


def write_run(root, sweep_id: str, key: str, side: str, case: str, status: str = "ok", **metrics) -> None:
    """One runs-table row as its own Parquet file, as the bench task writes it."""
    algo, task, sim = case.split("/")
    row = {"sweep_id": sweep_id, "run_key": key, "side": side, "ref": side, "sha": SHAS[side], "case": case,
           "algo": algo, "task": task, "sim": sim, "variant": "manager", "repeat": 0, "order": 0,
           "status": status, "error": None if status == "ok" else "ValueError: boom | bad",
           "wall_s": 1.0, "audit_env_class": f"{side.title()}Env", "audit_backend_class": "MujocoBackend",
           "audit_git_sha": SHAS[side], "host_cpu_model": "Test CPU", "params": "{}", "env": "{}", **metrics}
    path = root / "runs" / f"sweep={sweep_id}" / f"{key}.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist([row]), path)


def write_sweep(root, sweep_id: str, gates: list[dict], cases: list[str], repeats: int = 3, **extra) -> None:
    spec = {"name": sweep_id.rsplit("-", 1)[0], "baseline": "base", "cases": cases, "repeats": repeats,
            "sides": {"base": {"ref": "main"}, "cand": {"ref": "feature"}}, "gates": gates,
            "order": "interleaved", "order_seed": 0}
    write_record(root, SweepRecord.from_json({
        "sweep_id": sweep_id, "created": "2026-01-01T00:00:00+00:00", "status": "finished", "repo": "/repo",
        "planned_runs": len(cases) * 2 * repeats, "spec": spec,
        "sides": {s: {"ref": spec["sides"][s]["ref"], "sha": SHAS[s], "variant": "manager"} for s in SHAS},
        "host": {"cpu_model": "Test CPU", "cpu_logical": 2}, **extra}))


def write_go2_runs(root, sweep_id: str) -> None:
    for i, (tp, ph) in enumerate([(100.0, 10.0), (110.0, 10.0), (90.0, 10.0)]):
        write_run(root, sweep_id, f"b{i}", "base", GO2, throughput=tp, physics_ms=ph, update_state_ms=2.0,
                  reset_done_ms=1.0, d2h_ms=0.0)
    for i, (tp, ph) in enumerate([(200.0, 5.0), (220.0, 5.0), (180.0, 5.0)]):
        write_run(root, sweep_id, f"c{i}", "cand", GO2, throughput=tp, physics_ms=ph, update_state_ms=4.0,
                  reset_done_ms=1.0, d2h_ms=0.0)


def rows_by(report, case: str, side: str) -> dict:
    return {r.metric: r for r in report.rows if r.case == case and r.side == side}


def test_medians_ranges_cv_and_ratios(tmp_path):
    write_sweep(tmp_path, "ab-20260101T000000", [], [GO2])
    write_go2_runs(tmp_path, "ab-20260101T000000")
    report = make_report(tmp_path, "ab-20260101T000000")
    base, cand = rows_by(report, GO2, "base"), rows_by(report, GO2, "cand")
    tp = base["throughput"].summary
    assert (tp.n, tp.median, tp.min, tp.max) == (3, 100.0, 90.0, 110.0)
    assert tp.cv == pytest.approx(math.sqrt(200 / 3) / 100)
    assert cand["throughput"].ratio == pytest.approx(2.0) and base["throughput"].ratio == 1.0
    assert cand["physics_ms"].ratio == pytest.approx(0.5)
    assert cand["update_state_ms"].ratio == pytest.approx(2.0)
    assert math.isnan(cand["d2h_ms"].ratio), "0/0 has no ratio"
    assert report.counts[GO2, "cand"] == (3, 0) and report.exit_code == EXIT_OK
    assert report.audit["cand"]["env_class"] == "CandEnv"


@pytest.mark.parametrize("gates, verdicts, code", [
    ([{"metric": "throughput", "min_ratio": 1.5}], [Verdict.PASS], EXIT_OK),
    ([{"metric": "throughput", "min_ratio": 2.6}], [Verdict.FAIL], EXIT_GATE_FAILED),
    ([{"metric": "physics_ms", "max_ratio": 0.6}, {"metric": "physics_ms", "max_ratio": 0.4}],
     [Verdict.PASS, Verdict.FAIL], EXIT_GATE_FAILED),
    ([{"metric": "throughput", "min_ratio": 1.5, "max_ratio": 1.9}], [Verdict.INCONCLUSIVE],
     EXIT_GATE_INCONCLUSIVE),
    ([{"metric": "d2h_ms", "max_ratio": 1.0}], [Verdict.FAIL], EXIT_GATE_FAILED),
    # no run reported the metric: nothing to judge, so NO DATA and the exit code of runs not ok
    ([{"metric": "update_state.command.compute_ms", "max_ratio": 1.0}], [Verdict.NO_DATA], EXIT_RUN_FAILED),
    ([{"metric": "update_state.command.compute_ms", "max_ratio": 1.0},
      {"metric": "throughput", "min_ratio": 2.6}], [Verdict.NO_DATA, Verdict.FAIL], EXIT_RUN_FAILED),
])
def test_gate_verdicts_and_exit_codes(tmp_path, gates, verdicts, code):
    write_sweep(tmp_path, "ab-20260101T000000", [{"case": None, "side": None, "min_ratio": None,
                                                  "max_ratio": None, **g} for g in gates], [GO2])
    write_go2_runs(tmp_path, "ab-20260101T000000")
    report = make_report(tmp_path, "ab-20260101T000000")
    assert [g.verdict for g in report.gates] == verdicts
    assert all(g.side == "cand" and g.case == GO2 for g in report.gates)
    assert all(g.reason for g in report.gates), "every verdict says why"
    assert report.exit_code == code


def test_a_side_without_ok_runs_has_no_data_for_its_gate_and_fails_the_run(tmp_path):
    sweep = "ab-20260101T000000"
    write_sweep(tmp_path, sweep, [{"metric": "throughput", "min_ratio": 1.0}], [GO2, G1])
    write_go2_runs(tmp_path, sweep)
    for i in range(3):
        write_run(tmp_path, sweep, f"g1b{i}", "base", G1, throughput=50.0 + i, physics_ms=3.0)
        write_run(tmp_path, sweep, f"g1c{i}", "cand", G1, status="failed" if i < 2 else "timeout")
    report = make_report(tmp_path, sweep)
    verdict = {g.case: g for g in report.gates}
    assert verdict[GO2].verdict == Verdict.PASS
    assert verdict[G1].verdict == Verdict.NO_DATA and verdict[G1].empty_sides == ("cand",)
    assert "no ok runs" in verdict[G1].reason and "cand" in verdict[G1].reason
    assert report.counts[G1, "cand"] == (0, 3) and len(report.failures) == 3
    assert report.exit_code == EXIT_RUN_FAILED
    md = report_markdown(report)
    assert "no ok runs" in md and "ValueError: boom \\| bad" in md and "timeout" in md


def test_runs_missing_from_the_results_count_as_failed(tmp_path):
    sweep = "ab-20260101T000000"
    outcomes = [{"run_key": "never", "order": 6, "side": "cand", "case": GO2, "repeat": 3,
                 "status": "cancelled", "error": "not run: the sweep stopped (run #5 failed)"}]
    write_sweep(tmp_path, sweep, [], [GO2], repeats=4, outcomes=outcomes, status="stopped",
                stopped_reason="run #5 failed")
    write_go2_runs(tmp_path, sweep)
    report = make_report(tmp_path, sweep)
    assert report.missing == 1 and list(report.failures["run_key"]) == ["never"]
    assert report.exit_code == EXIT_RUN_FAILED
    assert "not run: the sweep stopped" in report_markdown(report)


def test_report_reads_only_its_own_sweep(tmp_path):
    write_sweep(tmp_path, "ab-20260101T000000", [], [GO2])
    write_go2_runs(tmp_path, "ab-20260101T000000")
    write_run(tmp_path, "other-20260101T000000", "x", "cand", GO2, throughput=1e9)
    report = make_report(tmp_path, "ab-20260101T000000")
    assert rows_by(report, GO2, "cand")["throughput"].summary.max == 220.0


def test_cli_report_latest_writes_markdown_and_csv(tmp_path, capsys):
    write_sweep(tmp_path, "ab-20260101T000000", [{"metric": "throughput", "min_ratio": 1.5}], [GO2])
    write_go2_runs(tmp_path, "ab-20260101T000000")
    write_sweep(tmp_path, "ab-20251231T235959", [], [GO2])  # older: not "latest"
    assert latest_sweep_id(tmp_path) == "ab-20260101T000000"
    assert main(["report", "latest", "--results", str(tmp_path)]) == EXIT_OK
    out = capsys.readouterr().out
    assert "shasweep report: ab-20260101T000000" in out and SHAS["cand"][:10] in out
    assert out.splitlines()[-1] == "PASS 1 / FAIL 0 / INCONCLUSIVE 0 — exit 0"
    md = (tmp_path / "reports" / "ab-20260101T000000.md").read_text()
    assert "# shasweep report: ab-20260101T000000" in md and "**PASS**" in md and SHAS["cand"] in md
    assert "| throughput | 100 [90, 110] cv 8.2% | 200 [180, 220] cv 8.2% | 2.000 |" in md
    csv = pd.read_csv(tmp_path / "reports" / "ab-20260101T000000.csv")
    tp = csv[(csv.metric == "throughput") & (csv.side == "cand")].iloc[0]
    assert (tp["median"], tp["ratio"], tp["n_ok"], tp["sha"]) == (200.0, 2.0, 3, SHAS["cand"])
    assert (tmp_path / "reports" / "ab-20260101T000000.md").read_text().startswith("# shasweep report")


def test_cli_report_of_an_unknown_sweep_is_invalid_input(tmp_path, capsys):
    assert main(["report", "nope-20260101T000000", "--results", str(tmp_path)]) == EXIT_INVALID
    assert "no sweep 'nope-20260101T000000'" in capsys.readouterr().err
    assert main(["report", "latest", "--results", str(tmp_path)]) == EXIT_INVALID
    assert "no sweeps recorded" in capsys.readouterr().err


def test_sides_keep_their_declaration_order_through_the_record(tmp_path):
    sweep = "ab-20260101T000000"
    write_sweep(tmp_path, sweep, [], [GO2])
    record = read_record(tmp_path, sweep)
    record.spec.sides = {"cand": SideSpec(ref="feature"), "base": SideSpec(ref="main")}  # not alphabetical
    write_record(tmp_path, record)
    write_go2_runs(tmp_path, sweep)
    assert make_report(tmp_path, sweep).sides == ["cand", "base"]


def test_sides_show_the_bench_threads_and_the_host_omits_the_workers_own(tmp_path):
    """Thread variables in the sweep record are the Dask worker's (the nanny's 1s), not what the
    bench ran with: the report shows each side's audited bench threads instead."""
    sweep = "ab-20260101T000000"
    write_sweep(tmp_path, sweep, [], [GO2])
    record = read_record(tmp_path, sweep)
    write_record(tmp_path, replace(record, host={**record.host, "threads": '{"OMP_NUM_THREADS": "1"}'}))
    threads = '{"torch": 1, "OMP_NUM_THREADS": "2"}'
    write_run(tmp_path, sweep, "b0", "base", GO2, throughput=1.0, audit_threads=threads)
    md = report_markdown(make_report(tmp_path, sweep))
    assert "| bench threads |" in md and "torch=1 OMP=2" in md
    assert '"OMP_NUM_THREADS": "1"' not in md
