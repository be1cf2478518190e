"""The sweep report's model: per case and side, median [min, max] and CV of each metric, ratios to
the baseline with their interval (``verdicts``), gate verdicts, drift against earlier sweeps of the
same SHA and host (``drift``), each side's runtime audit, and the runs that were not ok.

Reads only the sweep's partition ``runs/sweep=<id>/`` and only the columns it needs. A run's status
holds the worker's audit verdict; older rows without one are audited here (``run_audit``); an audit
failure counts as not ok. Rendering is ``orchestrator.render``'s.
"""


from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pyarrow as pa

from orchestrator.analysis import drift, host_agreement, stats
from orchestrator.analysis.block_pairs import LOCKSTEP_COLUMNS, LockstepView, lockstep_view
from orchestrator.analysis.cells import by_cell, cell_counts, cell_summaries
from orchestrator.analysis.decided import DecidedFigure, deciding_gate, judged_together
from orchestrator.analysis.disturbed import COLUMNS as DISTURBANCE_COLUMNS
from orchestrator.analysis.disturbed import disturbed_runs
from orchestrator.analysis.instructions import (
    FINGERPRINT_COLUMNS,
    Disagreement,
    disagreements,
    fingerprint_problem,
)
from orchestrator.analysis.legacy_audit import AUDIT_INPUT_COLUMNS, apply_audit
from orchestrator.analysis.sequential import Looks
from orchestrator.analysis.software import SOFTWARE_COLUMNS
from orchestrator.analysis.suite_process import PROCESS_METRICS, ProcessFigure, suite_processes
from orchestrator.analysis.suites import (
    OneSided,
    SuiteSummary,
    one_sided_cases,
    run_count,
    summarize_suite,
    sweep_cases,
)
from orchestrator.analysis.verdicts import Comparer, GateVerdict, evaluate_gates, gates_exit_code
from orchestrator.analysis.waivers import Waiver, active_waivers, apply_waivers, waiver_log
from orchestrator.capabilities import TIME_METRIC
from orchestrator.errors import EXIT_RUN_FAILED, InvalidInputError
from orchestrator.spec.protocol_checks import is_metric_column, is_suite
from orchestrator.spec.record import SweepRecord
from orchestrator.spec.schema import SweepSpec
from orchestrator.store import query
from orchestrator.store.parquet import QUIET_COLUMNS
from orchestrator.store.records import read_record

AUDIT_COLUMNS: tuple[str, ...] = ("audit_env_class", "audit_backend_class", "audit_git_sha", "audit_threads",
                                  "audit_versions")
# What each run recorded about where it ran and where its peak RSS came from (the report's Host
# section and summary show their distinct values per side).
RUN_SOURCE_COLUMNS: tuple[str, ...] = ("rss_source", "host_id", "host_worker", "host_affinity",
                                       "host_cpu_governor", "host_gpu_name")


FAILURE_COLUMNS: tuple[str, ...] = ("run_key", "case", "side", "status", "error")


_STRING_COLUMNS: tuple[str, ...] = tuple(dict.fromkeys(
    ("run_key", "sweep_id", "side", "case", "sha", "status", "error", "suite_run_key", "bad_input",
     host_agreement.HOST_COLUMN,
     *AUDIT_COLUMNS, *RUN_SOURCE_COLUMNS, *AUDIT_INPUT_COLUMNS, *drift.IDENTITY_COLUMNS, *SOFTWARE_COLUMNS,
     *LOCKSTEP_COLUMNS, *FINGERPRINT_COLUMNS)))


@dataclass(frozen=True)
class MetricRow:
    """One metric of one side in one case."""

    case: str
    side: str
    metric: str
    summary: stats.Summary
    # the side's median over the baseline's, of the runs ``comparison`` compares (paired: the rounds
    # both ran); 1.0 for the baseline itself
    ratio: float
    # against the baseline (None for the baseline): a gated cell's as its gate decided it (its deciding
    # look, the gate's confidence: ``analysis.decided``), any other at 95 % over all its runs
    comparison: stats.Comparison | None = None
    gate: int | None = None  # the gate whose figure ``comparison`` is
    # how steady the metric was: the s.d. of the per-round log ratios of every round both sides ran
    # (``Comparer.round_sd``); None for the baseline and where the runs do not pair by round
    round_sd: float | None = None


@dataclass(frozen=True)
class Report:
    """Everything a report shows; ``exit_code`` is what ``shasweep run``/``report`` return."""

    sweep_id: str
    record: SweepRecord
    baseline: str
    cases: list[str]
    sides: list[str]
    metrics: list[str]
    rows: list[MetricRow]
    counts: dict[tuple[str, str], tuple[int, int]]  # (case, side) -> (ok, not ok)
    gates: list[GateVerdict]
    audit: dict[str, dict[str, str]]  # side -> audit or run-source column -> distinct values
    failures: pd.DataFrame  # FAILURE_COLUMNS of every run that is not ok (with or without a results row)
    missing: int  # planned runs with no result
    drift: list[drift.Drift] = field(default_factory=list)  # against earlier sweeps of the same identity
    disturbed: pd.DataFrame = field(default_factory=pd.DataFrame)  # disturbed.disturbed_runs of the ok runs
    waivers: list[Waiver] = field(default_factory=list)  # the waiver log, revocations included
    by_host: host_agreement.HostsView | None = None  # medians per bench host and hosts that disagree
    suites: list[SuiteSummary] = field(default_factory=list)  # a suite protocol's cases, per side
    lockstep: LockstepView | None = None  # the order each case ran in, block pairs, quiet waits
    # per non-baseline side of a suite: the cases it has alone (added) or lacks (removed); never gated
    one_sided: dict[str, OneSided] = field(default_factory=dict)
    processes: list[ProcessFigure] = field(default_factory=list)  # a suite's per-process figures
    # per compared (case, side), the one figure every output states and headlines (``analysis.decided``)
    decided: list[DecidedFigure] = field(default_factory=list)
    # instrument: the cases whose instruction count and time disagree (``analysis.instructions``)
    count_disagreements: list[Disagreement] = field(default_factory=list)

    @functools.cached_property
    def _rows_by_cell(self) -> dict[tuple[str, str, str], MetricRow]:
        return {(r.case, r.side, r.metric): r for r in self.rows}

    def row(self, case: str, side: str, metric: str) -> MetricRow:
        """The row of (case, side, metric), looked up (a report of 10,000 cases has 40,000 and more)."""
        return self._rows_by_cell[case, side, metric]

    def presence(self, case: str, side: str) -> str | None:
        """``added`` or ``removed`` for a case ``side`` has alone or lacks; None otherwise."""
        one_sided = self.one_sided.get(side)
        return one_sided.presence(case) if one_sided is not None else None

    @property
    def exit_code(self) -> int:
        """3 (a run not ok, or a gate with NO DATA) over 1 (a gate failed, not waived) over 4 (a gate
        inconclusive) over 0."""
        if self.missing or len(self.failures):
            return EXIT_RUN_FAILED
        return gates_exit_code(self.gates)


def load_runs(results_root: Path, sweep_id: str, metrics: list[str]) -> pd.DataFrame:
    """The sweep's runs, only the columns a report needs (absent columns read as null)."""
    schema = pa.schema([(name, pa.string()) for name in _STRING_COLUMNS]
                       + [("steps", pa.int64()), ("repeat", pa.int64()), ("host_cpu_logical", pa.int64()),
                          ("audited", pa.bool_()),
                          ("started_at", pa.timestamp("us", tz="UTC")),
                          ("ended_at", pa.timestamp("us", tz="UTC"))]
                       + [(name, pa.float64())
                          for name in dict.fromkeys([*metrics, *DISTURBANCE_COLUMNS, *PROCESS_METRICS])]
                       + [(name, kind) for name, kind in QUIET_COLUMNS.items()])
    return query.read_runs(results_root, query.Where(sweeps=[sweep_id]), schema)


def build_report(record: SweepRecord, runs: pd.DataFrame, history: pd.DataFrame | None = None) -> Report:
    """Aggregate ``runs`` (one row per run) of the sweep described by ``record``, audited first;
    ``history`` (``drift.load_earlier_runs``) holds earlier sweeps' runs to check drift against."""
    runs = apply_audit(counted_runs(record, runs), record)
    spec = record.spec
    if (problem := fingerprint_problem(runs)) is not None:
        raise InvalidInputError(f"sweep {record.sweep_id}: {problem}", "instrument")
    baseline, cases, sides = spec.baseline, sweep_cases(spec, runs), list(spec.sides)
    metrics = case_metrics(spec, report_metrics(spec, runs))
    ok = runs[runs["status"] == "ok"]
    counts = cell_counts(runs, cases, sides)
    summaries = cell_summaries(ok, cases, sides, metrics)
    comparer = sweep_comparer(spec, host_agreement.pairing_blocks(ok))
    one_sided = one_sided_cases(spec, runs, cases)
    waivers = waiver_log(record)
    gates = _gates(record, cases, comparer, one_sided)
    judged = by_cell(gates)
    rows = [_row(c, s, m, summaries, comparer, judged.get((c, s), [])) for c in cases for m in metrics
            for s in sides]
    unwritten = _unwritten_outcomes(record, runs)
    not_ok = runs.loc[runs["status"] != "ok", list(FAILURE_COLUMNS)]
    failures = pd.concat([not_ok, unwritten], ignore_index=True) if len(unwritten) else not_ok
    return Report(
        sweep_id=record.sweep_id, record=record, baseline=baseline, cases=cases, sides=sides,
        metrics=metrics, rows=rows, counts=counts, gates=gates,
        audit=_audit(runs, sides),
        failures=failures, missing=max(record.planned_runs - run_count(runs) - len(unwritten), 0),
        drift=[] if history is None else drift.find_drift(ok, history, metrics, spec.drift_threshold),
        disturbed=disturbed_runs(ok),
        waivers=waivers,
        by_host=host_agreement.hosts_view(ok, cases, sides, baseline, metrics),
        suites=_suites(spec, comparer, cases, sides, rows, one_sided),
        lockstep=lockstep_view(runs, baseline),
        one_sided=one_sided,
        processes=suite_processes(spec, runs, one_sided),
        decided=_decided(spec, rows, judged, one_sided),
        count_disagreements=disagreements(rows, baseline),
    )


def decided_gates(record: SweepRecord, runs: pd.DataFrame, *, power: bool = True) -> list[GateVerdict]:
    """The gate verdicts of a sweep's ``runs`` (audited with ``record``: ``apply_audit``) exactly as
    its report decides them (added and removed cases not gated, waivers applied): what the site
    reads of a sweep whose ``verdicts.json`` is missing or older than its runs or record.
    ``power``: ``verdicts.gate_verdict``'s."""
    spec, runs = record.spec, counted_runs(record, runs)
    cases = sweep_cases(spec, runs)
    ok = runs[runs["status"] == "ok"]
    return _gates(record, cases, sweep_comparer(spec, host_agreement.pairing_blocks(ok)),
                  one_sided_cases(spec, runs, cases), power=power)


def counted_runs(record: SweepRecord, runs: pd.DataFrame) -> pd.DataFrame:
    """``runs`` of the rounds the sweep counts: all, or those before the round its deadline stopped
    (``AdaptiveSummary.cut``)."""
    cut = record.adaptive.cut if record.adaptive is not None else None
    return runs if cut is None else runs[runs["repeat"] < cut]


def _gates(record: SweepRecord, cases: list[str], comparer: Comparer, one_sided: dict[str, OneSided],
           power: bool = True) -> list[GateVerdict]:
    spec = record.spec
    verdicts = evaluate_gates(spec.gates, cases, list(spec.sides), comparer, Looks.of_record(record),
                              not_gated=_one_sided_pairs(one_sided), power=power)
    return apply_waivers(verdicts, active_waivers(waiver_log(record)))


def case_metrics(spec: SweepSpec, metrics: list[str]) -> list[str]:
    """The metrics a report shows per case: for a suite, not the bench process's own figures, which
    every case of a suite run shares (``analysis.suite_process``)."""
    return [m for m in metrics if m not in PROCESS_METRICS] if is_suite(spec) else metrics


def _one_sided_pairs(one_sided: dict[str, OneSided]) -> set[tuple[str, str]]:
    """(case, side) of every added or removed case: listed, never gated."""
    return {(case, side) for side, cases in one_sided.items() for case in (*cases.added, *cases.removed)}


def _row(case: str, side: str, metric: str, summaries: dict[tuple[str, str, str], stats.Summary],
         comparer: Comparer, gates: list[GateVerdict]) -> MetricRow:
    """One row: a side's ratio is its comparison's, so the table, ``compare``, the gates and
    verdicts.json give one figure for the same runs (an adaptive sweep may run a baseline more rounds
    than a side: the rounds both ran are what a paired ratio compares); a gated cell's comparison is
    its gate's, as the gate decided it."""
    summary = summaries[case, side, metric]
    if side == comparer.baseline:
        return MetricRow(case, side, metric, summary, stats.ratio(summary.median, summary.median))
    gate = deciding_gate(gates, case, side, metric)
    steadiness = comparer.round_sd(case, side, metric)
    if gate is not None:
        return MetricRow(case, side, metric, summary, gate.comparison.ratio, gate.comparison, gate.gate,
                         steadiness)
    comparison = comparer.compare(case, side, metric)
    return MetricRow(case, side, metric, summary, comparison.ratio, comparison, round_sd=steadiness)


def _decided(spec: SweepSpec, rows: list[MetricRow], judged: dict[tuple[str, str], list[GateVerdict]],
             one_sided: dict[str, OneSided]) -> list[DecidedFigure]:
    """Per compared (case, side), its one figure (``analysis.decided``): its deciding gate's metric
    (``judged``: the gate verdicts per cell), else the sweep's primary metric; added and removed cases
    have none."""
    compared = {(r.case, r.side, r.metric): r for r in rows if r.comparison is not None}
    primary = primary_metric(spec, list(dict.fromkeys(r.metric for r in rows)))
    figures = []
    for case, side in dict.fromkeys((r.case, r.side) for r in compared.values()):
        if side in one_sided and one_sided[side].presence(case):
            continue
        gate = deciding_gate(judged.get((case, side), []), case, side)
        row = compared.get((case, side, gate.metric if gate else primary))
        if row is not None and row.comparison is not None:
            figures.append(DecidedFigure(case, side, row.metric, row.comparison, gate))
    return judged_together(figures)


def primary_metric(spec: SweepSpec, metrics: list[str]) -> str | None:
    """What an ungated cell's figure reads: a suite's time per call, else throughput where the report
    has it, else its first metric."""
    if is_suite(spec) and TIME_METRIC in metrics:
        return TIME_METRIC
    return "throughput" if "throughput" in metrics else next(iter(metrics), None)


def _suites(spec: SweepSpec, comparer: Comparer, cases: list[str], sides: list[str],
            rows: list[MetricRow], one_sided: dict[str, OneSided]) -> list[SuiteSummary]:
    """For a protocol whose runs measure many cases (a benchmark suite) with more than one case: per
    non-baseline side, its cases' ``time_ms`` sorted by change and the geometric mean ratio of those
    both sides have."""
    if len(cases) < 2 or not is_suite(spec):
        return []
    ratios = {(r.case, r.side): r.ratio for r in rows if r.metric == TIME_METRIC}
    return [summarize_suite(comparer, cases, side, TIME_METRIC,
                            {c: ratios.get((c, side), math.nan) for c in cases},
                            one_sided=one_sided.get(side))
            for side in sides if side != spec.baseline]


def sweep_comparer(spec: SweepSpec, ok: pd.DataFrame) -> Comparer:
    """The comparer of a sweep's ok runs: its baseline, order and noise mode."""
    return Comparer(ok, spec.baseline, spec.order.value, noise=spec.noise.value)


def sweep_gates(record: SweepRecord, runs: pd.DataFrame) -> list[GateVerdict]:
    """The gate verdicts of ``runs`` (audited first) as the report computes them; what an adaptive
    sweep reads after every round."""
    spec = record.spec
    audited = apply_audit(runs, record)
    ok = audited[audited["status"] == "ok"]
    cases = sweep_cases(spec, audited)
    return evaluate_gates(spec.gates, cases, list(spec.sides), sweep_comparer(spec, ok), Looks.of_spec(spec),
                          not_gated=_one_sided_pairs(one_sided_cases(spec, audited, cases)))


def _unwritten_outcomes(record: SweepRecord, runs: pd.DataFrame) -> pd.DataFrame:
    """Runs dispatch reported as not ok that left no row in the results (e.g. never started)."""
    outcomes = pd.DataFrame([{key: getattr(o, key) for key in FAILURE_COLUMNS} for o in record.outcomes],
                            columns=list(FAILURE_COLUMNS))
    return outcomes[(outcomes["status"] != "ok") & ~outcomes["run_key"].isin(runs["run_key"])]


def report_metrics(spec: SweepSpec, runs: pd.DataFrame | None = None) -> list[str]:
    """The sweep's ``metrics`` (for ``metrics: null``, the throughput, phases and metrics its ``runs``
    reported) plus any other metric a gate uses."""
    if spec.metrics is None:
        listed = reported_metrics(runs if runs is not None else pd.DataFrame())
    else:
        listed = list(spec.metrics)
    return listed + sorted({g.metric for g in spec.gates} - set(listed))


def reported_metrics(runs: pd.DataFrame) -> list[str]:
    """``throughput`` and every float column of the runs that some ok run reported and that holds a
    metric (``spec.protocol_checks.is_metric_column``): the phases (``*_ms``) first, then the other
    metrics, each in column order."""
    ok = runs[runs["status"] == "ok"] if "status" in runs else runs
    numeric = [c for c in ok.columns if c != "throughput" and is_metric_column(c)
               and pd.api.types.is_float_dtype(ok[c]) and ok[c].notna().any()]
    return ["throughput", *[c for c in numeric if c.endswith("_ms")],
            *[c for c in numeric if not c.endswith("_ms")]]


def _audit(runs: pd.DataFrame, sides: list[str]) -> dict[str, dict[str, str]]:
    audit = {}
    for side in sides:
        mine = runs[runs["side"] == side]
        audit[side] = {col.removeprefix("audit_"): _distinct(mine[col]) for col in AUDIT_COLUMNS}
        audit[side] |= {col: _distinct(mine[col]) for col in RUN_SOURCE_COLUMNS}
    return audit


def _distinct(values: pd.Series) -> str:
    return ", ".join(sorted({_compact(v) for v in values.dropna().unique()})) or "-"


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
    reported = (query.read_runs(results_root, query.Where(sweeps=[sweep_id]))
                if record.spec.metrics is None else None)
    metrics = report_metrics(record.spec, reported)
    return build_report(record, load_runs(results_root, sweep_id, metrics),
                        drift.load_earlier_runs(results_root, record, metrics))
