"""The report's sections as display tables (``Table``: header and string cells) and the number
formats every renderer shares, so Markdown, the terminal and HTML show the same cells."""


from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from orchestrator.analysis import stats
from orchestrator.analysis.legacy_audit import AUDIT_FAILED
from orchestrator.analysis.report_model import Report
from orchestrator.analysis.suite_process import ProcessFigure
from orchestrator.analysis.suites import SuiteSummary
from orchestrator.analysis.verdicts import (
    GateVerdict,
    bounds,
    format_detectable,
    format_interval,
    format_n,
    format_p,
)
from orchestrator.capabilities import Capability, describe_stored
from orchestrator.display import quantity
from orchestrator.spec.commands import is_envruntime_command, passes_variant
from orchestrator.spec.identical_sides import aa_warnings
from orchestrator.spec.record import AdaptiveSummary
from orchestrator.spec.schema import SweepSpec


@dataclass(frozen=True)
class Table:
    """A report section's table as display strings, for any renderer (Markdown, HTML)."""

    header: list[str]
    rows: list[list[str]]
    hovers: dict[tuple[int, int], str] = field(default_factory=dict)  # (row, column) -> full text (HTML)


def summary_lines(report: Report) -> list[str]:
    """When and how the sweep ran, and how many of its runs were ok."""
    rec, spec = report.record, report.record.spec
    stopped = f" ({rec.stopped_reason})" if rec.stopped_reason else ""
    n_ok = sum(ok for ok, _ in report.counts.values())
    n_audit = int((report.failures["status"] == AUDIT_FAILED).sum())
    return [
        f"created: {rec.created or '-'}; status: {rec.status}{stopped}",
        *warning_lines(report),
        f"repo: {rec.repo or '-'}",
        f"order: {spec.order.value} (seed {spec.order_seed}), repeats: {spec.repeats}, "
        f"baseline: {report.baseline}",
        f"runs: {n_ok} ok, {len(report.failures)} not ok ({n_audit} failed their audit), "
        f"{report.missing} not run, {len(report.disturbed)} disturbed",
        *_adaptive_line(rec.adaptive),
        *_protocol_line(spec),
        _rss_line(report),
    ]


def warning_lines(report: Report) -> list[str]:
    """What the reader should know before the numbers: sides that compare a commit with itself."""
    return aa_warnings(report.record.sides, report.record.spec.aa)


def _rss_line(report: Report) -> str:
    """Where the runs' peak RSS came from (``rss_source``)."""
    sources = _per_side(report, "rss_source")
    if sources == "-":
        return ("peak RSS from: not recorded (no run has rss_source; in rows written before it, "
                "bench_max_rss_mib is the launching worker's high-water mark, not the bench's)")
    return (f"peak RSS from: {sources} (rusage: the kernel's peak of the bench and its waited-for "
            "children; VmHWM: sampled from /proc; bench: its own report; none: no figure)")


def _protocol_line(spec: SweepSpec) -> list[str]:
    """``protocol: json; modules audited: ...`` where the bench does not prove its own code, or the
    sweep lists modules."""
    info = describe_stored(spec.protocol.value)
    listed = spec.audit_modules
    if info.has(Capability.AUDIT_FIELDS) and not listed:
        return []
    audited = ("the worktree's packages the bench imported (default)" if listed is None
               else ", ".join(listed) or "none")
    return [f"protocol: {info.name}; modules audited: {audited}"]


def _per_side(report: Report, column: str) -> str:
    """``value`` when every side recorded the same values of ``column``, else ``side value; ...``."""
    values = {side: report.audit[side].get(column, "-") for side in report.sides}
    if len(set(values.values())) == 1:
        return next(iter(values.values()), "-")
    return "; ".join(f"{side} {value}" for side, value in values.items())


def _adaptive_line(adaptive: AdaptiveSummary | None) -> list[str]:
    """``adaptive: 7 of 3-30 rounds, ended: every gate decided`` for an adaptive sweep."""
    if adaptive is None:
        return []
    return [f"adaptive: {adaptive.rounds} of {adaptive.repeats}-{adaptive.max_repeats} rounds, "
            f"ended: {adaptive.ended or 'the sweep stopped'}"]


def sides_table(report: Report) -> Table:
    """Each side's planned ref and SHA (and variant, where the command passes one) next to what the
    runs' audit recorded; an audit column no run reported (a bench that names no env class, a
    protocol without a header) is left out, so a foreign bench's table speaks only of what it has."""
    header = ["side", "ref", "sha", "variant", "env class", "backend class", "loaded sha", "bench threads"]
    rows = []
    for side in report.sides:
        info, audit = report.record.side(side), report.audit[side]
        rows.append([side, info.ref or "-", info.sha or "-", info.variant or "-", audit["env_class"],
                     audit["backend_class"], audit["git_sha"], audit["threads"]])
    shown = [i for i, name in enumerate(header)
             if i < 3 or (name == "variant" and passes_variant(report.record.spec.command))
             or (i > 3 and any(row[i] != "-" for row in rows))]
    return Table([header[i] for i in shown], [[row[i] for i in shown] for row in rows])


def case_counts(report: Report, case: str) -> str:
    """``side ok/not ok`` for every side of ``case``."""
    return ", ".join(f"{s} {report.counts[case, s][0]}/{report.counts[case, s][1]}" for s in report.sides)


def case_table(report: Report, case: str) -> Table:
    """Per metric: each side's median [min, max] cv, then each side's ratio to the baseline, then
    that ratio's interval and rank-test p-value, then how steady the metric was (``round s.d.``)."""
    others = [s for s in report.sides if s != report.baseline]
    ratios = [f"{s} / {report.baseline}" for s in others]
    intervals = [f"{s} / {report.baseline} CI, p" for s in others]
    steadiness = [f"{s} / {report.baseline} round s.d." for s in others]
    header = ["metric", f"{report.baseline} (baseline)", *others, *ratios, *intervals, *steadiness]
    rows = []
    for metric in report.metrics:
        cells = {s: report.row(case, s, metric) for s in report.sides}
        rows.append([metric, *(format_summary(cells[s].summary, report.counts[case, s][0])
                               for s in [report.baseline, *others]),
                     *(report.presence(case, s) or _ratio(cells[s].ratio) for s in others),
                     *("-" if report.presence(case, s) else _interval_and_p(cells[s].comparison)
                       for s in others),
                     *("-" if report.presence(case, s) else format_sd(cells[s].round_sd) for s in others)])
    return Table(header, rows)


def suite_table(report: Report, suite: SuiteSummary) -> Table:
    """A suite's cases of one side, largest change first, each with its medians, ratio, interval and
    gate verdict (``added`` or ``removed`` for a case one side lacks: not gated), then the geometric
    mean of the common cases' ratios with its interval."""
    header = ["case", f"{report.baseline} (baseline)", suite.side, f"{suite.side} / {report.baseline}",
              "interval", "gate"]
    rows_by = {(r.case, r.side): r for r in report.rows if r.metric == suite.metric}
    verdicts = {g.case: verdict_text(g) for g in report.gates
                if g.side == suite.side and g.metric == suite.metric}
    rows = []
    for case in suite.cases:
        base, mine = rows_by.get((case, report.baseline)), rows_by.get((case, suite.side))
        presence = report.presence(case, suite.side)
        rows.append([case, quantity(base.summary.median, suite.metric) if base else "-",
                     quantity(mine.summary.median, suite.metric) if mine else "-",
                     "-" if presence or not mine else _ratio(mine.ratio),
                     format_interval(mine.comparison) if mine and mine.comparison and not presence else "-",
                     presence or verdicts.get(case, "-")])
    interval = ("no CI (fewer than 2 rounds where every common case ran on both sides)"
                if math.isnan(suite.low)
                else f"{100 * suite.confidence:.4g}% CI {bounds(suite.low, suite.high)}")
    covered = (f"{suite.common} cases" if suite.common == len(suite.cases)
               else f"{suite.common} common cases of {len(suite.cases)}")
    rows.append([f"geometric mean ({covered}, {suite.rounds} rounds{', paired' if suite.paired else ''})",
                 "", "", _ratio(suite.geomean), interval, ""])
    return Table(header, rows)


def one_sided_lines(report: Report, name: Callable[[str], str] = str) -> list[str]:
    """Per side, the suite's cases it added or removed against the baseline: listed, never gated;
    each case as ``name`` gives it."""
    lines = []
    for side, cases in report.one_sided.items():
        for word, names in (("added", cases.added), ("removed", cases.removed)):
            if names:
                lines.append(f"{word} at {side} ({len(names)}, on one side only: not gated, not in the "
                             f"geometric mean): {', '.join(map(name, names))}")
    return lines


def process_table(report: Report, *, spread: bool = True) -> Table:
    """A suite's per-process figures (CPU time, peak RSS of the bench process that ran all its
    benchmarks): per metric each side's median (``spread``: [min, max], CV and runs) over its suite
    runs, then each other side's ratio to the baseline with its interval, or ``not compared``
    (``process_lines`` say why)."""
    others = [s for s in report.sides if s != report.baseline]
    header = ["metric", f"{report.baseline} (baseline)", *others,
              *(f"{s} / {report.baseline}" for s in others)]
    figures = {(f.side, f.metric): f for f in report.processes}
    rows = []
    for metric in dict.fromkeys(f.metric for f in report.processes):
        cells = [figures.get((s, metric)) for s in [report.baseline, *others]]
        rows.append([metric, *(_process_summary(f, spread) for f in cells),
                     *(_process_ratio(f) for f in cells[1:])])
    return Table(header, rows)


PROCESS_NOTE = ("One bench process runs every benchmark of a side's round, so its CPU time and peak RSS "
                "are the suite run's, not any benchmark's: one value per suite run, compared only "
                "where both sides ran the same benchmarks.")


def process_lines(report: Report) -> list[str]:
    """Why a side's per-process figures are not compared with the baseline's."""
    reasons = {f.side: f.not_compared for f in report.processes if f.not_compared}
    return [f"{side} / {report.baseline} not compared: {why}" for side, why in reasons.items()]


def _process_summary(figure: ProcessFigure | None, spread: bool) -> str:
    if figure is None:
        return "-"
    if not spread:
        return quantity(figure.summary.median, figure.metric)
    return f"{format_summary(figure.summary, figure.runs)} ({figure.runs} runs)"


def _process_ratio(figure: ProcessFigure | None) -> str:
    if figure is None or figure.comparison is None:
        return "not compared" if figure is not None and figure.not_compared else "-"
    return f"{_ratio(figure.comparison.ratio)} {format_interval(figure.comparison)}"


def _interval_and_p(comparison: stats.Comparison | None) -> str:
    """``95% CI [0.941, 0.962], p 0.008``."""
    return "-" if comparison is None else f"{format_interval(comparison)}, p {format_p(comparison)}"


GATES_NOTE = ("A verdict reads a t-interval of the ratio on the log scale (per-round log ratios when runs "
              "pair by round, else both sides' log values; 10 % trimmed): PASS when it lies entirely "
              "within the bound, FAIL when entirely outside, INCONCLUSIVE when it straddles the bound. "
              "p is the two-sided Wilcoxon signed-rank (paired) or Mann-Whitney U p-value. MDE: the "
              "change from the bound this noise and n detect with 80 % power; an adaptive sweep's "
              "verdict is its first deciding look, each look at its share of the error rate.")


def confidence_note(report: Report) -> str | None:
    """One line where a gate's interval is read at another confidence than 95 % (an adaptive sweep's
    look, a gate's own ``confidence``): the rows it judges state that interval, the others 95 %."""
    levels = sorted({g.comparison.confidence for g in report.gates
                     if g.comparison.confidence != stats.DEFAULT_CONFIDENCE})
    if not levels:
        return None
    shown = ", ".join(f"{100 * level:.4g}%" for level in levels)
    within = (" A within gate's PASS reads a narrower interval than its FAIL and INCONCLUSIVE (an "
              "equivalence claim), so that with the truth on a bound the two wrong claims still add up "
              "to its error rate." if any(g.equivalence for g in report.gates) else "")
    return (f"Confidence: a row a gate judges states the gate's figure, its interval read at {shown}: the "
            "gate's own confidence at the look that decided it (an adaptive sweep's look spends only its "
            "share of the gate's error rate), over the runs that look compared; every other row's interval "
            f"is {100 * stats.DEFAULT_CONFIDENCE:g}% over all the runs it compares." + within)


def gates_table(report: Report) -> Table:
    """One row per gate verdict: the ratio, the verdict, its interval, p-value and n, and why."""
    rows = [[str(g.gate), g.metric, g.case, g.side, g.bound, _ratio(g.ratio), verdict_text(g),
             format_interval(g.comparison), format_p(g.comparison), format_n(g.comparison),
             format_detectable(g), g.reason]
            for g in report.gates]
    return Table(["gate", "metric", "case", "side", "bound", "ratio", "verdict", "interval", "p", "n",
                  "detectable", "reason"], rows)


def verdict_text(verdict: GateVerdict) -> str:
    """``PASS``, ``INCONCLUSIVE``, ``FAIL``, or ``FAIL (waived: reason)`` (``analysis.waivers``)."""
    if verdict.waived is None:
        return verdict.verdict
    return f"{verdict.verdict} (waived: {one_line(verdict.waived)})"


def drift_table(report: Report) -> Table:
    """Throughput, gate metrics and every flagged metric of each side that has history."""
    shown = {"throughput"} | {g.metric for g in report.gates}
    rows = [[d.case, d.side, d.metric, format_number(d.current), format_number(d.reference),
             f"{d.latest_sweep}: {format_number(d.latest)}", str(d.sweeps), format_change(100 * d.change),
             format_change_interval(d.interval) if d.interval else "-", "DRIFT" if d.flagged else "ok",
             "; ".join(d.software) or "same",
             f"new since {d.new_segment_since}" if d.new_segment_since else "-"]
            for d in report.drift if d.flagged or d.metric in shown]
    return Table(["case", "side", "metric", "this sweep", "history", "latest earlier sweep", "sweeps",
                  "change", "95% CI of the change", "drift", "software vs history", "segment"], rows)


def failures_table(report: Report) -> Table:
    """Every run that is not ok (failed, timed out, cancelled, failed its audit) with its error."""
    rows = [[f.run_key, f.case, f.side, f.status, one_line(f.error)] for f in report.failures.itertuples()]
    return Table(["run_key", "case", "side", "status", "error"], rows)


def host_lines(report: Report) -> list[str]:
    """The bench host's record, one ``key: value`` per line, only what was measured (a key the host
    could not tell, e.g. ``gpu_name`` on a host without a GPU, is left out)."""
    host = dict(report.record.host or {})
    if host and not is_envruntime_command(report.record.spec.command):
        # the worker's own package list is envruntime's; another repository's bench reports its own
        reported = sorted({v for side in report.sides for v in report.audit[side].get("versions", "-")
                           .split(", ") if v != "-"})
        host["versions"] = "; ".join(reported) or "not reported by the bench"
    # The record's thread variables are the bench worker's own (a Dask nanny sets them to 1); each
    # bench's real settings are in its audit, shown per side under "bench threads". Where the runs
    # ran is what each run recorded.
    for column in ("host_worker", "host_affinity", "host_cpu_governor", "host_gpu_name"):
        values = _per_side(report, column)
        host[column.removeprefix("host_")] = None if values == "-" else f"{values} (per run)"
    return [f"{k}: {v}" for k, v in sorted(host.items()) if k != "threads" and v not in (None, "", "-")]


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


def format_sd(sd: float | None) -> str:
    """A per-round s.d. of log ratios as a percentage (``0.52%``: a round's ratio is off by about that
    much); ``-`` where the runs do not pair by round."""
    if sd is None:
        return "-"
    return "< 0.01%" if 100 * sd < 0.01 else f"{100 * sd:.2g}%"


def format_change(pct: float) -> str:
    """``+4.2%``; ``-`` when undefined."""
    return "-" if math.isnan(pct) else f"{pct:+.1f}%"


def format_change_interval(c: stats.Comparison) -> str:
    """The interval of a change (B against A) as percentages, ``[-3.1%, +0.4%]``; ``-`` without one."""
    if not c.has_interval:
        return "-"
    return f"[{format_change(100 * (c.low - 1))}, {format_change(100 * (c.high - 1))}]"


def one_line(text: object) -> str:
    """``text`` on one line, at most 200 characters; ``-`` when there is none."""
    if not isinstance(text, str):
        return "-"
    flat = " ".join(text.split())
    return flat if len(flat) <= 200 else flat[:197] + "..."
