"""``shasweep report --format gh``: a GitHub job summary / pull-request comment in Markdown.

The verdict line first, then the clear changes (every case, side and metric whose interval of the
ratio lies entirely above or below 1, largest first, with the verdict of a gate on it), then the full
table in a collapsed ``<details>``. The whole stays under ``MAX_BYTES`` (a PR comment holds 65,536
characters): rows that do not fit are left out and counted. Text from cases and benches is escaped.
"""

from __future__ import annotations

import math
import re

from orchestrator.analysis.report_model import MetricRow, Report
from orchestrator.analysis.verdicts import format_interval
from orchestrator.render.tables import format_number, verdict_text
from orchestrator.render.terminal import report_verdict_line

MAX_BYTES = 60_000
_MD_SPECIAL = re.compile(r"[\\`*_{}\[\]<>()#+!|~&]")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def gh_markdown(report: Report, max_bytes: int = MAX_BYTES) -> str:
    """The summary of ``report``, at most ``max_bytes`` UTF-8 bytes."""
    compared = [r for r in report.rows if r.comparison is not None]
    changed = sorted((r for r in compared if _clear_change(r)), key=lambda r: -abs(math.log(r.ratio)))
    head = [f"### shasweep {gh_text(report.sweep_id)}: {gh_text(report_verdict_line(report))}", ""]
    verdicts = {(g.case, g.side, g.metric): g for g in report.gates}
    header = ["case", "side", "metric", f"{gh_text(report.baseline)} median", "median", "ratio", "interval",
              "gate"]
    medians = {(r.case, r.metric): r.summary.median for r in report.rows if r.side == report.baseline}

    def line(r: MetricRow) -> str:
        gate = verdicts.get((r.case, r.side, r.metric))
        cells = [r.case, r.side, r.metric, format_number(medians.get((r.case, r.metric), math.nan)),
                 format_number(r.summary.median), "-" if math.isnan(r.ratio) else f"{r.ratio:.3f}",
                 format_interval(r.comparison), verdict_text(gate) if gate else "-"]
        return "| " + " | ".join(gh_text(c) for c in cells) + " |"

    table_head = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    reserve = 400  # the lines after each table
    parts = head + ([f"**{len(changed)} clear change{'s' if len(changed) != 1 else ''}** "
                     "(interval of the ratio entirely above or below 1):", ""] if changed
                    else ["No clear change: every interval of the ratio includes 1.", ""])
    if changed:
        shown = _fit([line(r) for r in changed], max_bytes - 2 * reserve - _size(parts + table_head))
        parts += table_head + shown + _more(len(changed) - len(shown)) + [""]
    parts += [f"<details><summary>All cases: {len(report.cases)} cases, {len(compared)} comparisons"
              "</summary>", "", *table_head]
    shown = _fit([line(r) for r in compared], max_bytes - reserve - _size(parts))
    parts += [*shown, *_more(len(compared) - len(shown)), "", "</details>"]
    return "\n".join(parts) + "\n"


def gh_text(text: object) -> str:
    """``text`` as literal Markdown on one line: no HTML, link, emphasis, code or table break."""
    escaped = _MD_SPECIAL.sub(r"\\\g<0>", " ".join(str(text).split()))
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", escaped)


def _clear_change(row: MetricRow) -> bool:
    c = row.comparison
    return c is not None and c.has_interval and (c.low > 1 or c.high < 1)


def _fit(lines: list[str], budget: int) -> list[str]:
    """The leading ``lines`` that fit in ``budget`` bytes."""
    kept: list[str] = []
    used = 0
    for text in lines:
        used += len(text.encode()) + 1
        if used > budget:
            break
        kept.append(text)
    return kept


def _more(count: int) -> list[str]:
    return [f"\n… and {count} more rows: see the full report (`shasweep report`)."] if count else []


def _size(lines: list[str]) -> int:
    return sum(len(text.encode()) + 1 for text in lines)
