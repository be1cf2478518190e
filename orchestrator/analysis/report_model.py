"""The sweep report's model: per case and side, median [min, max] and CV of each metric, ratios to
the baseline with their interval (``verdicts``), gate verdicts, drift against earlier sweeps of the
same SHA and host (``drift``), each side's runtime audit, and the runs that were not ok.

Reads only the sweep's partition ``runs/sweep=<id>/`` and only the columns it needs. Every ok run is
audited first (``run_audit``): one that fails counts as not ok. Rendering is ``orchestrator.render``'s.
"""


from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds

from orchestrator.analysis import drift, hosts, stats
from orchestrator.analysis.run_audit import AUDIT_INPUT_COLUMNS, apply_audit
from orchestrator.analysis.verdicts import (
    FAIL,
    INCONCLUSIVE,
    Comparer,
    GateVerdict,
    evaluate_gates,
)
from orchestrator.errors import EXIT_GATE_FAILED, EXIT_GATE_INCONCLUSIVE, EXIT_OK, EXIT_RUN_FAILED
from orchestrator.spec.schema import REPORT_METRICS, GateSpec
from orchestrator.store.parquet import runs_dir
from orchestrator.store.records import read_record

AUDIT_COLUMNS: tuple[str, ...] = ("audit_env_class", "audit_backend_class", "audit_git_sha", "audit_threads")


FAILURE_COLUMNS: tuple[str, ...] = ("run_key", "case", "side", "status", "error")


_STRING_COLUMNS: tuple[str, ...] = tuple(dict.fromkeys(
    ("run_key", "sweep_id", "side", "case", "sha", "status", "error", hosts.HOST_COLUMN, *AUDIT_COLUMNS,
     *AUDIT_INPUT_COLUMNS, *drift.IDENTITY_COLUMNS)))


@dataclass(frozen=True)
class MetricRow:
    """One metric of one side in one case."""

    case: str
    side: str
    metric: str
    summary: stats.Summary
    ratio: float  # side median / baseline median (1.0 for the baseline itself)
    comparison: stats.Comparison | None = None  # against the baseline at 95% (None for the baseline)


@dataclass(frozen=True)
class Report:
    """Everything a report shows; ``exit_code`` is what ``shasweep run``/``report`` return."""

    sweep_id: str
    record: dict[str, Any]
    baseline: str
    cases: list[str]
    sides: list[str]
    metrics: list[str]
    rows: list[MetricRow]
    counts: dict[tuple[str, str], tuple[int, int]]  # (case, side) -> (ok, not ok)
    gates: list[GateVerdict]
    audit: dict[str, dict[str, str]]  # side -> audit column -> distinct values
    failures: pd.DataFrame  # FAILURE_COLUMNS of every run that is not ok (with or without a results row)
    missing: int  # planned runs with no result
    drift: list[drift.Drift] = field(default_factory=list)  # against earlier sweeps of the same identity
    by_host: hosts.HostsView | None = None  # medians per bench host and hosts that disagree

    @property
    def exit_code(self) -> int:
        """3 (a run not ok) over 1 (a gate failed) over 4 (a gate inconclusive) over 0."""
        if self.missing or len(self.failures):
            return EXIT_RUN_FAILED
        verdicts = {g.verdict for g in self.gates}
        if FAIL in verdicts:
            return EXIT_GATE_FAILED
        return EXIT_GATE_INCONCLUSIVE if INCONCLUSIVE in verdicts else EXIT_OK


def load_runs(results_root: Path, sweep_id: str, metrics: list[str]) -> pd.DataFrame:
    """The sweep's runs, only the columns a report needs (absent columns read as null)."""
    schema = pa.schema([(name, pa.string()) for name in _STRING_COLUMNS]
                       + [("steps", pa.int64()), ("repeat", pa.int64()),
                          ("started_at", pa.timestamp("us", tz="UTC"))]
                       + [(name, pa.float64()) for name in metrics])
    path = runs_dir(results_root, sweep_id)
    if not path.is_dir():
        return schema.empty_table().to_pandas()
    return ds.dataset(path, format="parquet", schema=schema).to_table().to_pandas()


def build_report(record: dict[str, Any], runs: pd.DataFrame, history: pd.DataFrame | None = None) -> Report:
    """Aggregate ``runs`` (one row per run) of the sweep described by ``record``, audited first;
    ``history`` (``drift.load_history``) holds earlier sweeps' runs to check drift against."""
    runs = apply_audit(runs, record)
    spec = record["spec"]
    baseline, cases, sides = spec["baseline"], list(spec["cases"]), list(spec["sides"])
    gates = [GateSpec(**g) for g in spec.get("gates", [])]
    metrics = report_metrics(spec, gates)
    ok = runs[runs["status"] == "ok"]
    counts = {(c, s): (int(((ok["case"] == c) & (ok["side"] == s)).sum()),
                       int(((runs["case"] == c) & (runs["side"] == s) & (runs["status"] != "ok")).sum()))
              for c in cases for s in sides}
    summaries = {(c, s, m): stats.summarize(ok.loc[(ok["case"] == c) & (ok["side"] == s), m])
                 for c in cases for s in sides for m in metrics}
    comparer = Comparer(hosts.pairing_blocks(ok), baseline, str(spec.get("order")),
                        resamples=int(spec.get("bootstrap_resamples", stats.DEFAULT_RESAMPLES)),
                        seed=int(spec.get("bootstrap_seed", stats.DEFAULT_SEED)))
    rows = [MetricRow(c, s, m, summaries[c, s, m],
                      stats.ratio(summaries[c, s, m].median, summaries[c, baseline, m].median),
                      None if s == baseline else comparer.compare(c, s, m))
            for c in cases for m in metrics for s in sides]
    threshold = float(spec.get("drift_threshold", drift.DEFAULT_THRESHOLD))
    planned = int(record.get("planned_runs", len(cases) * len(sides) * int(spec.get("repeats", 1))))
    unwritten = _unwritten_outcomes(record, runs)
    not_ok = runs.loc[runs["status"] != "ok", list(FAILURE_COLUMNS)]
    failures = pd.concat([not_ok, unwritten], ignore_index=True) if len(unwritten) else not_ok
    return Report(
        sweep_id=record["sweep_id"], record=record, baseline=baseline, cases=cases, sides=sides,
        metrics=metrics, rows=rows, counts=counts,
        gates=evaluate_gates(gates, cases, sides, comparer),
        audit=_audit(runs, sides),
        failures=failures, missing=max(planned - len(runs) - len(unwritten), 0),
        drift=[] if history is None else drift.find_drift(ok, history, metrics, threshold),
        by_host=hosts.hosts_view(ok, cases, sides, baseline, metrics),
    )


def _unwritten_outcomes(record: dict[str, Any], runs: pd.DataFrame) -> pd.DataFrame:
    """Runs dispatch reported as not ok that left no row in the results (e.g. never started)."""
    outcomes = pd.DataFrame(record.get("outcomes") or [], columns=list(FAILURE_COLUMNS))
    return outcomes[(outcomes["status"] != "ok") & ~outcomes["run_key"].isin(runs["run_key"])]


def report_metrics(spec: dict[str, Any], gates: list[GateSpec]) -> list[str]:
    """The sweep's ``metrics`` (``REPORT_METRICS`` for records without them) plus any other metric a gate
    uses."""
    listed = list(spec.get("metrics") or REPORT_METRICS)
    return listed + sorted({g.metric for g in gates} - set(listed))


def _audit(runs: pd.DataFrame, sides: list[str]) -> dict[str, dict[str, str]]:
    audit = {}
    for side in sides:
        mine = runs[runs["side"] == side]
        audit[side] = {col.removeprefix("audit_"): _distinct(mine[col]) for col in AUDIT_COLUMNS}
    return audit


def _distinct(values: pd.Series) -> str:
    return ", ".join(sorted({_compact(v) for v in values.dropna()})) or "-"


def _compact(value: str) -> str:
    """A JSON object audit value as ``key=value`` pairs (``OMP_NUM_THREADS`` as ``OMP``); text as is."""
    try:
        parsed = json.loads(value)
    except ValueError:
        return value
    if not isinstance(parsed, dict):
        return value
    return " ".join(f"{k.removesuffix('_NUM_THREADS')}={_plain(v)}" for k, v in parsed.items())


def _plain(value: object) -> str:
    return ",".join(map(str, value)) if isinstance(value, list) else str(value)


def make_report(results_root: Path, sweep_id: str) -> Report:
    """Read the record and runs of ``sweep_id`` and build its report."""
    record = read_record(results_root, sweep_id)
    spec = record["spec"]
    metrics = report_metrics(spec, [GateSpec(**g) for g in spec.get("gates", [])])
    return build_report(record, load_runs(results_root, sweep_id, metrics),
                        drift.load_history(results_root, record, metrics))
