"""The pull-request comment of ``shasweep ci``: short, stable, under ``MAX_BYTES`` whatever the suite.

A hidden marker first (a bot step finds its own comment by it and edits it in place), one verdict
line, what was compared, then the clear changes (``analysis.decided``: a gate FAILed, or the
figure's interval widened for the cases judged together lies entirely above or below 1), FAILs
first, then the largest, each with its one figure: the ratio, and the interval of its claim (the
gate's decided interval for a FAIL, the family-wise one that makes any other change clear), at the
confidence it was read; "no change beyond noise in N cases" for the other compared cases; the cases
added or removed (never gated) and the undecided ones counted; a link or path to the full report.
Nothing here computes a change of its own. Text from cases and refs renders as the characters it is
(``markdown.md_text``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from orchestrator.analysis.decided import DecidedFigure, clear_changes
from orchestrator.analysis.report_model import Report
from orchestrator.analysis.verdicts import Verdict, bounds
from orchestrator.render.markdown import md_text
from orchestrator.render.terminal import report_verdict_line
from orchestrator.render.verdict_line import is_waived, verdict_counts

MARKER = "<!-- shasweep-ci -->"
MAX_BYTES = 4000
MAX_ROWS = 10
MAX_CASE_CHARS = 90
MAX_LISTED = 5  # added or removed cases named; the others counted
VERDICT_WORDS = {0: "PASS", 1: "FAIL", 2: "ERROR", 3: "ERROR", 4: "INCONCLUSIVE"}
COUNT_NAMES = {"PASS": "pass", "FAIL": "fail", "INCONCLUSIVE": "inconclusive", "NO DATA": "no-data",
               "WAIVED": "waived"}


@dataclass(frozen=True)
class Compared:
    """What a comment says was compared: the head and the merge base it was measured against."""

    head: str
    merge_base: str
    base_ref: str
    suite: str  # e.g. "pytest-benchmark tests in benchmarks (15 benchmark functions)"
    report: str  # a URL or a path to the full report
    budget: str


def ci_comment(report: Report, compared: Compared) -> str:
    """The comment's Markdown for a sweep that ran."""
    changed = changes(report)
    quiet = len(report.decided) - len(changed)
    head = [MARKER, f"### shasweep: {VERDICT_WORDS.get(report.exit_code, 'ERROR')} — "
                    f"{md_text(report_verdict_line(report))}", "", _compared_line(report, compared), ""]
    tail = [f"No change beyond noise in {quiet} case{_s(quiet)}." if quiet else "", *_one_sided(report),
            *_undecided(report), "", f"Full report: {_link(compared.report)}"]
    rows = [_row(figure) for figure in changed[:MAX_ROWS]]
    more = len(changed) - len(rows)
    while rows:
        text = _join(head, rows, more, tail)
        if len(text.encode()) <= MAX_BYTES:
            return text
        rows.pop()
        more += 1
    return _join(head, rows, more, tail)


def changes(report: Report) -> list[DecidedFigure]:
    """The clear changes of ``report``, FAILs first, then the largest."""
    return sorted(clear_changes(report.decided), key=lambda f: (not f.failed, -f.size))


def report_values(report: Report) -> dict[str, str]:
    """The step outputs of a sweep that ran, as the comment counts them: verdict, exit-code, the gate
    verdicts' counts, changed (clear changes), added and removed cases, cases and sweep-id."""
    counts = verdict_counts(report.gates)
    one_sided = report.one_sided.values()
    return {"verdict": VERDICT_WORDS.get(report.exit_code, "ERROR"), "exit-code": str(report.exit_code),
            **{name: str(counts.get(key, 0)) for key, name in COUNT_NAMES.items()},
            "changed": str(len(changes(report))), "added": str(sum(len(s.added) for s in one_sided)),
            "removed": str(sum(len(s.removed) for s in one_sided)), "cases": str(len(report.cases)),
            "sweep-id": report.sweep_id}


def note_comment(title: str, message: str, report: str | None = None) -> str:
    """The comment when ``shasweep ci`` compared nothing: a title (``ERROR — nothing compared (exit
    2)``) and why, in one line."""
    lines = [MARKER, f"### shasweep: {title}", "", md_text(message)[:1500]]
    return "\n".join([*lines, *(["", f"Full report: {_link(report)}"] if report else [])]) + "\n"


def _row(figure: DecidedFigure) -> str:
    """case | metric | ratio | the interval of the row's claim | the gate's verdict and bound."""
    gate, c = figure.gate, figure.claimed
    interval = (f"{bounds(c.low, c.high)} at {100 * c.confidence:.4g} %" if c.has_interval
                else "no interval")
    ratio = "-" if math.isnan(figure.ratio) else f"{figure.ratio:.3f}"
    verdict = "-" if gate is None else f"{gate.verdict}{' (waived)' if is_waived(gate) else ''} {gate.bound}"
    # numbers, verdicts and bounds are ours: only the names are escaped
    return f"| {md_text(_short(figure.case))} | {md_text(figure.metric)} | {ratio} | {interval} | {verdict} |"


def _join(head: list[str], rows: list[str], more: int, tail: list[str]) -> str:
    table = (["| case | metric | ratio head/base | interval | gate |", "|---|---|---|---|---|", *rows, ""]
             if rows else [])
    extra = [f"… and {more} more clear change{_s(more)} in the full report.", ""] if more else []
    return "\n".join([*head, *table, *extra, *(line for line in tail if line)]) + "\n"


def _compared_line(report: Report, compared: Compared) -> str:
    adaptive = report.record.adaptive
    rounds = adaptive.rounds if adaptive else report.record.spec.repeats
    why = f" ({adaptive.ended})" if adaptive and adaptive.ended else ""
    same = " (the same commit: an A/A comparison, the machine against itself)" if (
        compared.head == compared.merge_base) else ""
    return (f"`{compared.head[:12]}` against the merge base `{compared.merge_base[:12]}` with "
            f"{md_text(compared.base_ref)}{same}; {md_text(compared.suite)}, "
            f"{report.record.spec.order.value}, {rounds} rounds{why}, budget {md_text(compared.budget)}.")


def _one_sided(report: Report) -> list[str]:
    """The cases a side has alone or lacks: counted, the first ``MAX_LISTED`` named."""
    lines = []
    for cases in report.one_sided.values():
        for word, names in (("Added", cases.added), ("Removed", cases.removed)):
            if names:
                shown = ", ".join(md_text(_short(name)) for name in names[:MAX_LISTED])
                others = f" and {len(names) - MAX_LISTED} more" if len(names) > MAX_LISTED else ""
                lines.append(f"{word} (not gated): {len(names)} case{_s(len(names))}: {shown}{others}.")
    return lines


def _undecided(report: Report) -> list[str]:
    count = sum(1 for g in report.gates if g.verdict == Verdict.INCONCLUSIVE)
    if not count:
        return []
    return [f"{count} gate{_s(count)} undecided within the budget (INCONCLUSIVE, exit 4): treat as neutral, "
            "or run again with a larger `--budget`."]


def _link(report: str) -> str:
    """An autolink for a URL (``<``, ``>`` and blanks percent-encoded), else the path as text."""
    if report.startswith(("https://", "http://")):
        return "<" + report.replace("<", "%3C").replace(">", "%3E").replace(" ", "%20") + ">"
    return md_text(report)


def _short(case: str) -> str:
    return case if len(case) <= MAX_CASE_CHARS else case[:MAX_CASE_CHARS - 1] + "…"


def _s(count: int) -> str:
    return "" if count == 1 else "s"
