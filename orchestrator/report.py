"""The sweep report: per case and side, median [min, max] and CV of each metric, ratios to the
baseline with their bootstrap interval and Mann-Whitney p-value, gate verdicts (``verdicts``), drift
against earlier sweeps of the same SHA and host (``drift``), sides with SHAs and runtime audit, and
the host record.

Reads only the sweep's partition ``runs/sweep=<id>/`` and only the columns it needs. Every ok run is
audited first (``orchestrator.audit``): one that fails counts as not ok. Written as Markdown and CSV
under ``<results>/reports/<id>.{md,csv}``; the section tables are public so other renderers reuse them.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds

from orchestrator import drift, stats
from orchestrator.audit import AUDIT_FAILED, AUDIT_INPUT_COLUMNS, apply_audit
from orchestrator.errors import EXIT_GATE_FAILED, EXIT_GATE_INCONCLUSIVE, EXIT_OK, EXIT_RUN_FAILED
from orchestrator.results import runs_dir
from orchestrator.spec import REPORT_METRICS, GateSpec
from orchestrator.sweep_record import read_record
from orchestrator.verdicts import (
    FAIL,
    INCONCLUSIVE,
    Comparer,
    GateVerdict,
    evaluate_gates,
    format_interval,
    format_n,
    format_p,
)

AUDIT_COLUMNS: tuple[str, ...] = ("audit_env_class", "audit_backend_class", "audit_git_sha", "audit_threads")
FAILURE_COLUMNS: tuple[str, ...] = ("run_key", "case", "side", "status", "error")
_STRING_COLUMNS: tuple[str, ...] = tuple(dict.fromkeys(
    ("run_key", "sweep_id", "side", "case", "sha", "status", "error", *AUDIT_COLUMNS, *AUDIT_INPUT_COLUMNS,
     *drift.IDENTITY_COLUMNS)))


@dataclass(frozen=True)
class Table:
    """A report section's table as display strings, for any renderer (Markdown, HTML)."""

    header: list[str]
    rows: list[list[str]]


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
    comparer = Comparer(ok, baseline, str(spec.get("order")),
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


def to_frame(report: Report) -> pd.DataFrame:
    """The metric table in long form (the CSV), with each side's interval, p-value and drift."""
    drifts = {(d.case, d.side, d.metric): d for d in report.drift}
    return pd.DataFrame([{
        "sweep_id": report.sweep_id, "case": r.case, "side": r.side,
        "sha": report.record.get("sides", {}).get(r.side, {}).get("sha"),
        "baseline": r.side == report.baseline, "metric": r.metric,
        "n_ok": report.counts[r.case, r.side][0], "n_failed": report.counts[r.case, r.side][1],
        "median": r.summary.median, "min": r.summary.min, "max": r.summary.max, "cv": r.summary.cv,
        "ratio": r.ratio, **_comparison_columns(r.comparison),
        **_drift_columns(drifts.get((r.case, r.side, r.metric))),
    } for r in report.rows])


def _comparison_columns(comparison: stats.Comparison | None) -> dict[str, float | bool | None]:
    if comparison is None:
        return {"ratio_ci_low": math.nan, "ratio_ci_high": math.nan, "p_value": math.nan, "paired": None}
    return {"ratio_ci_low": comparison.low, "ratio_ci_high": comparison.high, "p_value": comparison.p_value,
            "paired": comparison.paired}


def _drift_columns(found: drift.Drift | None) -> dict[str, float | bool | int | str | None]:
    if found is None:
        return {"history_sweeps": 0, "history_median": math.nan, "drift": math.nan, "drifted": False}
    return {"history_sweeps": found.sweeps, "history_median": found.reference, "drift": found.change,
            "drifted": found.flagged}


def to_markdown(report: Report) -> str:
    """The human-readable report."""
    sections = [_summary_md(report), _sides_md(report), *(_case_md(report, c) for c in report.cases),
                _gates_md(report), _drift_md(report), _failures_md(report), _host_md(report)]
    return "\n\n".join(s for s in sections if s) + "\n"


def markdown_table(table: Table) -> str:
    """A Markdown table; ``|`` inside cells is escaped."""
    lines = ["| " + " | ".join(table.header) + " |", "|" + "---|" * len(table.header)]
    return "\n".join(lines + ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |"
                              for row in table.rows])


def _summary_md(report: Report) -> str:
    return "\n".join([f"# shasweep report: {report.sweep_id}", "",
                      *(f"- {line}" for line in summary_lines(report))])


def summary_lines(report: Report) -> list[str]:
    """When and how the sweep ran, and how many of its runs were ok."""
    rec, spec = report.record, report.record["spec"]
    stopped = f" ({rec['stopped_reason']})" if rec.get("stopped_reason") else ""
    n_ok = sum(ok for ok, _ in report.counts.values())
    n_audit = int((report.failures["status"] == AUDIT_FAILED).sum())
    return [
        f"created: {rec.get('created', '-')}; status: {rec.get('status', '-')}{stopped}",
        f"repo: {rec.get('repo', '-')}",
        f"order: {spec.get('order')} (seed {spec.get('order_seed')}), repeats: {spec.get('repeats')}, "
        f"baseline: {report.baseline}",
        f"runs: {n_ok} ok, {len(report.failures)} not ok ({n_audit} failed their audit), "
        f"{report.missing} not run",
    ]


def _sides_md(report: Report) -> str:
    return "## Sides\n\n" + markdown_table(sides_table(report))


def sides_table(report: Report) -> Table:
    """Each side's planned ref, SHA and variant next to what the runs' audit recorded."""
    rows = []
    for side in report.sides:
        info, audit = report.record.get("sides", {}).get(side, {}), report.audit[side]
        planned = [str(info.get(k, "-")) for k in ("ref", "sha", "variant")]
        rows.append([side, *planned, audit["env_class"], audit["backend_class"], audit["git_sha"],
                     audit["threads"]])
    return Table(["side", "ref", "sha", "variant", "env class", "backend class", "loaded sha",
                  "bench threads"], rows)


def _case_md(report: Report, case: str) -> str:
    counts = f"runs ok/not ok: {case_counts(report, case)}"
    return f"## {case}\n\n{counts}\n\n" + markdown_table(case_table(report, case))


def case_counts(report: Report, case: str) -> str:
    """``side ok/not ok`` for every side of ``case``."""
    return ", ".join(f"{s} {report.counts[case, s][0]}/{report.counts[case, s][1]}" for s in report.sides)


def case_table(report: Report, case: str) -> Table:
    """Per metric: each side's median [min, max] cv, then each side's ratio to the baseline, then
    that ratio's bootstrap interval and Mann-Whitney p-value."""
    others = [s for s in report.sides if s != report.baseline]
    ratios = [f"{s} / {report.baseline}" for s in others]
    intervals = [f"{s} / {report.baseline} CI, p" for s in others]
    header = ["metric", f"{report.baseline} (baseline)", *others, *ratios, *intervals]
    rows = []
    for metric in report.metrics:
        cells = {r.side: r for r in report.rows if r.case == case and r.metric == metric}
        rows.append([metric, *(format_summary(cells[s].summary, report.counts[case, s][0])
                               for s in [report.baseline, *others]),
                     *(_ratio(cells[s].ratio) for s in others),
                     *(_interval_and_p(cells[s].comparison) for s in others)])
    return Table(header, rows)


def _interval_and_p(comparison: stats.Comparison | None) -> str:
    """``95% CI [0.941, 0.962], p 0.008``."""
    return "-" if comparison is None else f"{format_interval(comparison)}, p {format_p(comparison)}"


def _gates_md(report: Report) -> str:
    if not report.gates:
        return ""
    table = gates_table(report)
    verdict = table.header.index("verdict")
    bold = [[*row[:verdict], f"**{row[verdict]}**", *row[verdict + 1:]] for row in table.rows]
    return "## Gates\n\n" + GATES_NOTE + "\n\n" + markdown_table(Table(table.header, bold))


GATES_NOTE = ("A verdict reads the bootstrap interval of the ratio of medians: PASS when it lies entirely "
              "within the bound, FAIL when entirely outside, INCONCLUSIVE when it straddles the bound "
              "(more repeats needed). p is the two-sided Mann-Whitney U p-value; runs are paired by "
              "round when every round ran both sides.")


def gates_table(report: Report) -> Table:
    """One row per gate verdict: the ratio, the verdict, its interval, p-value and n, and why."""
    rows = [[str(g.gate), g.metric, g.case, g.side, g.bound, _ratio(g.ratio), g.verdict,
             format_interval(g.comparison), format_p(g.comparison), format_n(g.comparison), g.reason]
            for g in report.gates]
    return Table(["gate", "metric", "case", "side", "bound", "ratio", "verdict", "interval", "p", "n",
                  "reason"], rows)


def _drift_md(report: Report) -> str:
    if not report.drift:
        return ""
    threshold = report.drift[0].threshold
    note = (f"Each side's median against the median of earlier sweeps' medians of the same SHA, case, "
            f"variant, params, env and host; DRIFT when it moved more than {100 * threshold:g}%.")
    return "## Drift\n\n" + note + "\n\n" + markdown_table(drift_table(report))


def drift_table(report: Report) -> Table:
    """Throughput, gate metrics and every flagged metric of each side that has history."""
    shown = {"throughput"} | {g.metric for g in report.gates}
    rows = [[d.case, d.side, d.metric, format_number(d.current), format_number(d.reference),
             f"{d.latest_sweep}: {format_number(d.latest)}", str(d.sweeps), _change(d.change),
             "DRIFT" if d.flagged else "ok"]
            for d in report.drift if d.flagged or d.metric in shown]
    return Table(["case", "side", "metric", "this sweep", "history", "latest earlier sweep", "sweeps",
                  "change", "drift"], rows)


def _failures_md(report: Report) -> str:
    if not len(report.failures):
        return ""
    return "## Runs not ok\n\n" + markdown_table(failures_table(report))


def failures_table(report: Report) -> Table:
    """Every run that is not ok (failed, timed out, cancelled, failed its audit) with its error."""
    rows = [[f.run_key, f.case, f.side, f.status, one_line(f.error)] for f in report.failures.itertuples()]
    return Table(["run_key", "case", "side", "status", "error"], rows)


def _host_md(report: Report) -> str:
    return "## Host\n\n" + "\n".join(f"- {line}" for line in host_lines(report))


def host_lines(report: Report) -> list[str]:
    """The bench host's record, one ``key: value`` per line."""
    host = report.record.get("host") or {}
    # The record's thread variables are the bench worker's own (a Dask nanny sets them to 1); each
    # bench's real settings are in its audit, shown per side under "bench threads".
    return [f"{k}: {v}" for k, v in sorted(host.items()) if k != "threads"] or ["not recorded"]


def write_report(report: Report, results_root: Path) -> tuple[Path, Path]:
    """Write ``reports/<id>.md`` and ``reports/<id>.csv``; returns their paths."""
    out = results_root / "reports"
    out.mkdir(parents=True, exist_ok=True)
    md, csv = out / f"{report.sweep_id}.md", out / f"{report.sweep_id}.csv"
    md.write_text(to_markdown(report), encoding="utf-8")
    to_frame(report).to_csv(csv, index=False)
    return md, csv


def format_summary(s: stats.Summary, ok_runs: int | None = None) -> str:
    """``median [min, max] cv N%``; ``not reported`` when ``ok_runs`` ok runs lack the metric (e.g. a
    phase their SHA does not time), else ``no ok runs``."""
    if s.n == 0:
        return "not reported" if ok_runs else "no ok runs"
    cv = "-" if math.isnan(s.cv) else f"{100 * s.cv:.1f}%"
    return f"{format_number(s.median)} [{format_number(s.min)}, {format_number(s.max)}] cv {cv}"


def format_number(value: float) -> str:
    """4 significant digits; large values (throughput) in full with thousands separators."""
    if math.isnan(value):
        return "-"
    return f"{value:,.0f}" if abs(value) >= 10_000 else f"{value:.4g}"


def _ratio(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.3f}"


def _change(value: float) -> str:
    return "-" if math.isnan(value) else f"{100 * value:+.1f}%"


def one_line(text: object) -> str:
    """``text`` on one line, at most 200 characters; ``-`` when there is none."""
    if not isinstance(text, str):
        return "-"
    flat = " ".join(text.split())
    return flat if len(flat) <= 200 else flat[:197] + "..."

