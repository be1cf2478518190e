"""The report as Markdown (``reports/<id>.md``) and as the long-form frame of its CSV (``reports/<id>.csv``),
and the Markdown helpers every document shares."""


from __future__ import annotations

import math
import re

import pandas as pd

from orchestrator.analysis import drift, stats
from orchestrator.analysis.report_model import Report
from orchestrator.analysis.suites import SuiteSummary
from orchestrator.printable import printable
from orchestrator.render import count_section, host_section, lockstep_section
from orchestrator.render.tables import (
    GATES_NOTE,
    PROCESS_NOTE,
    Table,
    case_counts,
    case_table,
    confidence_note,
    drift_table,
    failures_table,
    gates_table,
    host_lines,
    one_sided_lines,
    process_lines,
    process_table,
    sides_table,
    suite_table,
    summary_lines,
)
from orchestrator.render.waiver_tables import WAIVERS_NOTE, gates_line, waivers_table

# Escaped with a backslash: code spans, emphasis, strikethrough ('~': GFM strikes HEAD~1 and HEAD~2
# through), table cells, escapes themselves; '<' where it could open HTML or an autolink (before a
# letter, '/', '!' or '?'); '&' where it starts an entity; '_' only at a word's edge (inside a word, as
# in physics_ms, it never emphasises); '](' (a link); GFM's extended autolinks: the ':' of '://' and
# the '.' of 'www.'. Harmless inside a line, so left alone: '<=', '->'.
_MD_SPECIAL = re.compile(r"[\\`*|~]|<(?=[A-Za-z/!?])|&(?=#?\w+;)|:(?=//)|(?i:(?<=www))\.")
# In a code span of their own: '@' (an e-mail address is found in the text after escapes are read,
# and GitHub makes a mention of '@name' likewise) and '#' before a digit (GitHub's issue links).
_LINKED_MARKS = re.compile(r"@|#(?=[0-9])")
_INTRAWORD_SAFE = re.compile(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")


def to_frame(report: Report) -> pd.DataFrame:
    """The metric table in long form (the CSV), with each side's interval, p-value, per-round s.d. of
    its log ratio and drift; case and side names ``printable``."""
    drifts = {(d.case, d.side, d.metric): d for d in report.drift}
    return pd.DataFrame([{
        "sweep_id": report.sweep_id, "case": printable(r.case), "side": printable(r.side),
        "sha": report.record.side(r.side).sha,
        "baseline": r.side == report.baseline, "metric": r.metric,
        "n_ok": report.counts[r.case, r.side][0], "n_failed": report.counts[r.case, r.side][1],
        "median": r.summary.median, "min": r.summary.min, "max": r.summary.max, "cv": r.summary.cv,
        "ratio": r.ratio, **_comparison_columns(r.comparison),
        "round_sd": math.nan if r.round_sd is None else r.round_sd,
        **_drift_columns(drifts.get((r.case, r.side, r.metric))),
    } for r in report.rows])


def _comparison_columns(comparison: stats.Comparison | None) -> dict[str, float | bool | None]:
    if comparison is None:
        return {"ratio_ci_low": math.nan, "ratio_ci_high": math.nan, "p_value": math.nan, "paired": None}
    return {"ratio_ci_low": comparison.low, "ratio_ci_high": comparison.high, "p_value": comparison.p_value,
            "paired": comparison.paired}


def _drift_columns(found: drift.Drift | None) -> dict[str, float | bool | int | str | None]:
    if found is None:
        return {"history_sweeps": 0, "history_median": math.nan, "drift": math.nan,
                "drift_ci_low": math.nan, "drift_ci_high": math.nan, "drifted": False, "drift_software": None,
                "new_segment_since": None}
    low, high = (found.interval.low - 1, found.interval.high - 1) if found.interval else (math.nan, math.nan)
    return {"history_sweeps": found.sweeps, "history_median": found.reference, "drift": found.change,
            "drift_ci_low": low, "drift_ci_high": high, "drifted": found.flagged,
            "drift_software": "; ".join(found.software) or None, "new_segment_since": found.new_segment_since}


def report_markdown(report: Report) -> str:
    """The human-readable report."""
    sections = [_summary_md(report), _sides_md(report), *(_suite_md(report, s) for s in report.suites),
                _one_sided_md(report), _process_md(report), *(_case_md(report, c) for c in report.cases),
                _gates_md(report), _counts_md(report), _lockstep_md(report), _waivers_md(report),
                _hosts_md(report),
                _drift_md(report),
                _disturbed_md(report), _failures_md(report),
                _host_md(report)]
    return "\n\n".join(s for s in sections if s) + "\n"


def md_text(text: object) -> str:
    """``text`` as literal Markdown on one line, for every Markdown shasweep writes (the report, ``gh``,
    ``compare``, ``history``, a pull request's comment, the site): whatever a bench, a ref, a case name
    or a record holds renders as the characters it is (``printable``), never as HTML, a link, a
    mention, code, emphasis or a table cell break."""
    flat = printable(" ".join(str(text).splitlines()))
    escaped = _INTRAWORD_SAFE.sub(r"\\\g<0>", _MD_SPECIAL.sub(r"\\\g<0>", flat)).replace("](", "]\\(")
    return _LINKED_MARKS.sub(r"`\g<0>`", escaped)


def md_items(lines: list[str]) -> str:
    """Lines of text as a Markdown list, each escaped (``md_text``)."""
    return "\n".join(f"- {md_text(line)}" for line in lines)


def markdown_table(table: Table, bold: frozenset[tuple[int, int]] = frozenset()) -> str:
    """A Markdown table, every cell escaped (``md_text``); the ``(row, column)`` cells of ``bold`` in bold."""
    lines = ["| " + " | ".join(md_text(h) for h in table.header) + " |", "|" + "---|" * len(table.header)]
    return "\n".join(lines + ["| " + " | ".join(_cell(c, (i, j) in bold) for j, c in enumerate(row)) + " |"
                              for i, row in enumerate(table.rows)])


def _cell(text: str, bold: bool) -> str:
    return f"**{md_text(text)}**" if bold else md_text(text)


def _summary_md(report: Report) -> str:
    return f"# shasweep report: {md_text(report.sweep_id)}\n\n" + md_items(summary_lines(report))


def _sides_md(report: Report) -> str:
    return "## Sides\n\n" + markdown_table(sides_table(report))


def _suite_md(report: Report, suite: SuiteSummary) -> str:
    return (f"## Suite: {suite.metric}, {suite.side} / {report.baseline}\n\nlargest change first; "
            "the geometric mean's interval is of the per-round mean log ratio over the cases both sides "
            "have\n\n"
            + markdown_table(suite_table(report, suite)))


def _one_sided_md(report: Report) -> str:
    lines = one_sided_lines(report)
    return "## Added and removed cases\n\n" + md_items(lines) if lines else ""


def _process_md(report: Report) -> str:
    if not report.processes:
        return ""
    lines = process_lines(report)
    return ("## Suite process\n\n" + PROCESS_NOTE + "\n\n" + (md_items(lines) + "\n\n" if lines else "")
            + markdown_table(process_table(report)))


def _case_md(report: Report, case: str) -> str:
    counts = f"runs ok/not ok: {case_counts(report, case)}"
    return f"## {md_text(case)}\n\n{md_text(counts)}\n\n" + markdown_table(case_table(report, case))


def _gates_md(report: Report) -> str:
    if not report.gates:
        return ""
    table = gates_table(report)
    verdict = table.header.index("verdict")
    bold = frozenset((i, verdict) for i in range(len(table.rows)))
    note = confidence_note(report)
    return ("## Gates\n\n" + GATES_NOTE + "\n\n" + (note + "\n\n" if note else "") + gates_line(report)
            + "\n\n" + markdown_table(table, bold))


def _counts_md(report: Report) -> str:
    if not count_section.has_counts(report):
        return ""
    return "## Instructions and time\n\n" + count_section.COUNT_NOTE + "\n\n" + md_items(
        count_section.disagreement_lines(report))


def _lockstep_md(report: Report) -> str:
    view = report.lockstep
    if view is None:
        return ""
    lines = "\n".join(f"- {line}" for line in lockstep_section.order_lines(view))
    table = markdown_table(lockstep_section.pairs_table(view)) if view.rounds else ""
    return "\n\n".join(part for part in ("## Lockstep", lockstep_section.LOCKSTEP_NOTE, lines, table) if part)


def _waivers_md(report: Report) -> str:
    if not report.waivers:
        return ""
    return "## Waivers\n\n" + WAIVERS_NOTE + "\n\n" + markdown_table(waivers_table(report))


def _hosts_md(report: Report) -> str:
    if not host_section.shown(report):
        return ""
    lines = md_items(host_section.host_lines_by_host(report))
    tables = [f"median {md_text(metric)} per host:\n\n" + markdown_table(table)
              for metric, table in host_section.host_median_tables(report)]
    return "\n\n".join(["## Hosts", host_section.HOSTS_NOTE, lines, *tables])


def _drift_md(report: Report) -> str:
    if not report.drift:
        return ""
    threshold = report.drift[0].threshold
    note = (f"Each side's median against the median of earlier sweeps' medians of the same SHA, case, "
            f"variant, params, env and host; DRIFT when the change lies outside the noise of both: its 95% "
            f"interval (this sweep's runs against the earlier ones', widened by how far the earlier sweeps' "
            f"levels differ beyond their run noise) excludes no change, and it is at least "
            f"{100 * threshold:g}% (drift_threshold). "
            f"'software vs history' names the packages the bench or host reported at other versions "
            f"in those sweeps: a drift with a software change need not be the machine.")
    moved = [md_items([f"{d.case} {d.side} {d.metric}: the median sits in a new segment of its history, "
                       f"begun by sweep {d.new_segment_since}"]) for d in report.drift if d.new_segment_since]
    return ("## Drift\n\n" + note + "\n\n" + "".join(line + "\n" for line in moved) + ("\n" if moved else "")
            + markdown_table(drift_table(report)))


def _disturbed_md(report: Report) -> str:
    if not len(report.disturbed):
        return ""
    rows = [[r.case, r.side, str(r.repeat), r.run_key, r.reason] for r in report.disturbed.itertuples()]
    note = ("Ok runs the host disturbed (CPU steal, load above the CPU count, or an outlying step-time "
            "CV). They are counted; the trimmed intervals limit their pull, and `rerun_disturbed: true` "
            "runs each again once.")
    return "## Disturbed runs\n\n" + note + "\n\n" + markdown_table(
        Table(["case", "side", "repeat", "run_key", "reason"], rows))


def _failures_md(report: Report) -> str:
    if not len(report.failures):
        return ""
    return "## Runs not ok\n\n" + markdown_table(failures_table(report))


def _host_md(report: Report) -> str:
    return "## Host\n\n" + md_items(host_lines(report))
