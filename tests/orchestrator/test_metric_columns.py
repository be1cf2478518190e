"""Which run columns hold metrics is one rule (``spec.protocol_checks.is_metric_column``): the store's
own columns (``RESERVED_COLUMNS``) never, but throughput and the bench process's figures; what the
bench reported always. A sweep with ``quiet:`` and no ``metrics:`` once counted the float ``quiet_*``
columns as bench metrics, and every report failed (issue 41 item 5)."""

from __future__ import annotations

import dataclasses

from test_results import outcome, planned

from orchestrator.analysis.report_model import make_report, reported_metrics
from orchestrator.contract import BenchUsage, QuietWait
from orchestrator.spec.protocol_checks import BENCH_PROCESS_METRICS, RESERVED_COLUMNS, is_metric_column
from orchestrator.spec.record import SweepRecord
from orchestrator.store.parquet import run_table, write_run
from orchestrator.store.query import ALL, read_runs
from orchestrator.store.records import write_record

QUIET = QuietWait(waited_s=1.5, load=0.2, steal=0.0, met=True)


def every_column_run(tmp_path, key: str = "r1"):
    """A run whose row has every column the store writes: a variant, a suite case, lockstep blocks, a
    quiet wait, the bench process's usage, a reported phase and metric."""
    run = planned(tmp_path, key)
    result = dataclasses.replace(
        outcome(extra_phase="x_ms"), quiet=QUIET, ran_in="lockstep", fallback=None, blocks=[],
        suite_run_key="suite", bad_input=None, audit_modules={"m": "/x/m.py"},
        usage=BenchUsage(3.0, 2.0, 0.5, 50.0, "rusage"), lock_wait_s=0.1, elapsed_s=3.0, audited=True,
        summary={"throughput": 100.0, "phase_means_ms": {"physics_ms": 2.0, "x_ms": 0.5},
                 "metrics": {"peak_items": 7.0}})
    return run, result


def test_the_store_writes_no_column_of_its_own_that_is_not_reserved(tmp_path):
    run, result = every_column_run(tmp_path)
    reported = {"physics_ms", "x_ms", "peak_items"}
    own = {c for c in run_table(run, result).column_names if not c.startswith(("host_", "audit_"))}
    assert own - reported <= RESERVED_COLUMNS, own - reported - RESERVED_COLUMNS
    assert {c for c in own if is_metric_column(c)} == {"throughput", *BENCH_PROCESS_METRICS, *reported}


def test_a_quiet_sweep_without_metrics_reports_only_what_was_measured(tmp_path):
    root = tmp_path / "results"
    for i, (side, repeat) in enumerate((s, r) for r in range(3) for s in ("base", "cand")):
        run, result = every_column_run(tmp_path, f"r{i}")
        run = dataclasses.replace(run, side=side, repeat=repeat, order=i)
        write_run(run, dataclasses.replace(result, suite_run_key=None, ran_in=None))
    spec = {"name": "quiet", "baseline": "base", "cases": [run.case], "repeats": 3, "metrics": None,
            "quiet": {"max_load": 1.0, "max_steal": 0.5, "max_wait_s": 2.0},
            "command": list(run.argv_template), "sides": {"base": {"ref": "main"}, "cand": {"ref": "main"}}}
    write_record(root, SweepRecord.from_json({
        "sweep_id": "s1", "created": "2026-01-01T00:00:00+00:00", "status": "finished", "planned_runs": 6,
        "spec": spec, "sides": {side: {"ref": "main", "sha": "a" * 40} for side in ("base", "cand")}}))
    runs = read_runs(root, ALL)
    assert {"quiet_wait_s", "quiet_load", "quiet_steal"} <= set(runs.columns)
    assert not any(c.startswith("quiet_") for c in reported_metrics(runs))
    report = make_report(root, "s1")
    assert report.metrics == ["throughput", "physics_ms", "x_ms", *BENCH_PROCESS_METRICS, "peak_items"]
    assert report.exit_code == 0 and len(report.rows) == 2 * len(report.metrics)
