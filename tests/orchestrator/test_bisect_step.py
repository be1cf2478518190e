"""A bisect step's sweep read as a mark: gate verdicts, a candidate whose bench failed (skip), and
failures that are not the candidate's bench (the good side's, a run the worker never recorded)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from orchestrator.analysis.bisect_step import step_result
from orchestrator.analysis.report_model import build_report, load_runs
from orchestrator.spec.record import SweepRecord

CASE = "sac/fake/none"
GOOD, CAND = "a" * 40, "b" * 40


def record(outcomes: list[dict] | None = None) -> SweepRecord:
    spec = {"name": "bis.bbbbbbbbbbbb", "baseline": "good", "cases": [CASE], "repeats": 3,
            "sides": {"good": {"ref": GOOD}, "cand": {"ref": CAND}}, "order": "interleaved", "order_seed": 0,
            "gates": [{"metric": "throughput", "min_ratio": 0.95, "max_ratio": None, "case": None,
                       "side": None, "confidence": 0.95}],
            "metrics": ["throughput"]}
    return SweepRecord.from_json({
        "sweep_id": "bis.bbbbbbbbbbbb-20260101T000000", "created": "2026-01-01T00:00:00+00:00",
        "status": "finished", "planned_runs": 6, "spec": spec, "outcomes": outcomes or [],
        "sides": {"good": {"sha": GOOD}, "cand": {"sha": CAND}}})


def runs(cand: list[float | None], statuses: list[str] | None = None) -> pd.DataFrame:
    rows = []
    for side, sha, values in (("good", GOOD, [100.0, 101.0, 99.0]), ("cand", CAND, cand)):
        for i, value in enumerate(values):
            status = (statuses or ["ok"] * 3)[i] if side == "cand" else "ok"
            rows.append({"run_key": f"{side}{i}", "sweep_id": record().sweep_id, "side": side,
                         "case": CASE, "sha": sha, "audit_git_sha": sha, "status": status, "repeat": i,
                         "throughput": value,
                         "error": None if status == "ok" else "RuntimeError: broken",
                         "started_at": pd.Timestamp("2026-01-01", tz="UTC") + pd.Timedelta(minutes=i)})
    frame = load_runs(Path("/nonexistent"), "none", ["throughput"])  # the empty frame with every column
    return pd.concat([frame, pd.DataFrame(rows)], ignore_index=True)


@pytest.mark.parametrize(("cand", "mark", "verdict"), [
    ([80.0, 81.0, 79.0], "bad", "FAIL"), ([100.0, 100.5, 99.5], "good", "PASS"),
    ([60.0, 140.0, 61.0], "undecided", "INCONCLUSIVE")])
def test_the_gate_verdict_is_the_mark(cand, mark, verdict):
    table = runs(cand)
    result = step_result(build_report(record(), table), dict.fromkeys(table["run_key"], "ok"))
    assert (result.mark, result.verdict, result.failure, result.runs) == (mark, verdict, None, "3 vs 3")


def test_a_candidate_whose_bench_failed_is_skipped():
    table = runs([None, 100.0, 100.0], ["failed", "ok", "ok"])
    result = step_result(build_report(record(), table), dict.fromkeys(table["run_key"], "ok"))
    assert result.mark == "skip" and "broken" in result.reason and result.failure is None


def test_a_run_the_worker_never_recorded_is_a_failure_not_a_skip():
    table = runs([100.0, 100.0])
    lost = [{"run_key": "cand2", "order": 5, "side": "cand", "case": CASE, "repeat": 2, "status": "failed",
             "error": "the bench worker left the cluster during run cand2"}]
    result = step_result(build_report(record(lost), table), dict.fromkeys(table["run_key"], "ok"))
    assert result.mark is None and "left the cluster" in result.failure


def test_a_candidate_that_reports_no_value_of_the_gate_metric_is_skipped():
    """Every run ok, but the candidate commit's bench does not report the gated metric (e.g. a commit
    before the phase existed): its gate has NO DATA, read as a skip like a failed bench."""
    table = runs([None, None, None])
    report = build_report(record(), table)
    assert report.gates[0].verdict == "NO DATA"
    result = step_result(report, dict.fromkeys(table["run_key"], "ok"))
    assert (result.mark, result.failure) == ("skip", None) and "no ok runs with throughput" in result.reason


def test_a_good_side_without_the_gate_metric_is_a_failure_not_a_skip():
    table = runs([100.0, 100.0, 100.0])
    table.loc[table["side"] == "good", "throughput"] = None
    result = step_result(build_report(record(), table), dict.fromkeys(table["run_key"], "ok"))
    assert result.mark is None and "good commit" in result.reason and "'good'" in result.failure
