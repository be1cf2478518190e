"""The pull-request comment of ``shasweep ci``: short, stable, under ``MAX_BYTES`` whatever the suite.

A hidden marker first (a bot step finds its own comment by it and edits it in place), one verdict
line, what was compared, then the changed cases: every gate verdict whose decided interval lies
entirely above or below 1, or that FAILed, with its ratio and that interval (the gates' own figures:
no other "change" is computed here), FAILs first, then the largest changes; "no change beyond noise
in N cases" for the others; the undecided ones counted with what to do; a link or path to the full
report. Text from cases and refs is escaped (``gh_summary.gh_text``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from orchestrator.analysis.report_model import Report
from orchestrator.analysis.verdicts import GateVerdict, Verdict
from orchestrator.render.gh_summary import gh_text
from orchestrator.render.verdict_line import counts_text, is_waived, verdict_counts

MARKER = "<!-- shasweep-ci -->"
MAX_BYTES = 4000
MAX_ROWS = 10
MAX_CASE_CHARS = 90
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
    word = VERDICT_WORDS.get(report.exit_code, "ERROR")
    gates = report.gates
    changed = changed_gates(gates)
    quiet = len({g.case for g in gates} - {g.case for g in changed})
    head = [MARKER, f"### shasweep: {word} — {counts_text(gates)} (exit {report.exit_code})", "",
            _compared_line(report, compared), ""]
    tail = [f"No change beyond noise in {quiet} case{_s(quiet)}." if quiet else "", *_undecided(gates),
            *_not_ok(report), "", f"Full report: {_link(compared.report)}"]
    rows = [_row(g) for g in changed[:MAX_ROWS]]
    more = len(changed) - len(rows)
    while rows:
        text = _join(head, rows, more, tail)
        if len(text.encode()) <= MAX_BYTES:
            return text
        rows.pop()
        more += 1
    return _join(head, rows, more, tail)


def report_values(report: Report) -> dict[str, str]:
    """The step outputs of a sweep that ran, as the comment counts them: verdict, exit-code, the gate
    verdicts' counts, changed (cases with a change beyond noise), cases and sweep-id."""
    counts = verdict_counts(report.gates)
    changed = len({gate.case for gate in changed_gates(report.gates)})
    return {"verdict": VERDICT_WORDS.get(report.exit_code, "ERROR"), "exit-code": str(report.exit_code),
            **{name: str(counts.get(key, 0)) for key, name in COUNT_NAMES.items()},
            "changed": str(changed), "cases": str(len(report.cases)), "sweep-id": report.sweep_id}


def note_comment(title: str, message: str, report: str | None = None) -> str:
    """The comment when ``shasweep ci`` compared nothing: a title (``ERROR — nothing compared (exit
    2)``) and why, in one line."""
    lines = [MARKER, f"### shasweep: {title}", "", gh_text(message)[:1500]]
    return "\n".join([*lines, *(["", f"Full report: {_link(report)}"] if report else [])]) + "\n"


def changed_gates(gates: list[GateVerdict]) -> list[GateVerdict]:
    """The verdicts that FAILed or whose decided interval lies entirely above or below 1: FAILs
    first, then the largest changes."""
    def changed(gate: GateVerdict) -> bool:
        c = gate.comparison
        return gate.verdict == Verdict.FAIL or (c.has_interval and (c.low > 1 or c.high < 1))

    def order(gate: GateVerdict) -> tuple[bool, float]:
        size = abs(math.log(gate.ratio)) if gate.ratio > 0 and math.isfinite(gate.ratio) else math.inf
        return gate.verdict != Verdict.FAIL, -size

    return sorted((g for g in gates if changed(g)), key=order)


def _row(gate: GateVerdict) -> str:
    c = gate.comparison
    interval = (f"[{c.low:.3f}, {c.high:.3f}] at {100 * c.confidence:.4g} %" if c.has_interval
                else "no interval")
    verdict = f"{gate.verdict} (waived)" if is_waived(gate) else str(gate.verdict)
    ratio = "-" if math.isnan(gate.ratio) else f"{gate.ratio:.3f}"
    cells = [gh_text(_short(gate.case)), gh_text(gate.metric), ratio, interval, f"{verdict} {gate.bound}"]
    return "| " + " | ".join(cells) + " |"  # numbers, verdicts and bounds are ours: only names escaped


def _join(head: list[str], rows: list[str], more: int, tail: list[str]) -> str:
    table = (["| case | metric | ratio head/base | interval | gate |", "|---|---|---|---|---|", *rows, ""]
             if rows else [])
    extra = [f"… and {more} more changed case{_s(more)} in the full report.", ""] if more else []
    return "\n".join([*head, *table, *extra, *(line for line in tail if line)]) + "\n"


def _compared_line(report: Report, compared: Compared) -> str:
    adaptive = report.record.adaptive
    rounds = f"{adaptive.rounds} rounds ({adaptive.ended})" if adaptive and adaptive.ended else (
        f"{adaptive.rounds} rounds" if adaptive else f"{report.record.spec.repeats} rounds")
    same = " (the same commit: an A/A comparison, the machine against itself)" if (
        compared.head == compared.merge_base) else ""
    return (f"`{compared.head[:12]}` against the merge base `{compared.merge_base[:12]}` with "
            f"{gh_text(compared.base_ref)}{same}; {gh_text(compared.suite)}, "
            f"{report.record.spec.order.value}, {rounds}, budget {gh_text(compared.budget)}.")


def _undecided(gates: list[GateVerdict]) -> list[str]:
    count = sum(1 for g in gates if g.verdict == Verdict.INCONCLUSIVE)
    if not count:
        return []
    return [f"{count} gate{_s(count)} undecided within the budget (INCONCLUSIVE, exit 4): treat as neutral, "
            "or run again with a larger `--budget`."]


def _not_ok(report: Report) -> list[str]:
    failed = len(report.failures) + report.missing
    return [f"{failed} run{_s(failed)} not ok: see the full report (exit 3)."] if failed else []


def _link(report: str) -> str:
    """An autolink for a URL (``<``, ``>`` and blanks percent-encoded), else the path as text."""
    if report.startswith(("https://", "http://")):
        return "<" + report.replace("<", "%3C").replace(">", "%3E").replace(" ", "%20") + ">"
    return gh_text(report)


def _short(case: str) -> str:
    return case if len(case) <= MAX_CASE_CHARS else case[:MAX_CASE_CHARS - 1] + "…"


def _s(count: int) -> str:
    return "" if count == 1 else "s"
