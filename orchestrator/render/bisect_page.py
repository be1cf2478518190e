"""A bisect record (``<results>/bisect/<id>.json``) as a table of its steps and as an HTML page with
the ratio of each tested commit against its place in the first-parent history.

Everything is read from the record (plain JSON; its spec typed by ``spec.record.spec_from_json``);
nothing here runs git or reads Parquet.
"""

from __future__ import annotations

from typing import Any

from bokeh.models import ColumnDataSource, HoverTool, Span, Whisker
from bokeh.plotting import figure

from orchestrator.render.page import Page
from orchestrator.render.tables import Table, one_line
from orchestrator.spec.record import spec_from_json

MARK_COLORS: dict[str, str] = {"good": "#2ca02c", "bad": "#d62728", "skip": "#7f7f7f", "undecided": "#ff7f0e"}


def bisect_steps_table(record: dict[str, Any]) -> Table:
    """One row per step in the order taken: commit, ratio and interval, verdict, runs, mark."""
    rows = []
    for number, step in enumerate(record.get("steps") or []):
        ratio = step.get("ratio")
        rows.append([str(number), str(step.get("role", "step")), str(step.get("index", -1) + 1),
                     str(step.get("sha", ""))[:12], one_line(step.get("subject"))[:60],
                     "-" if ratio is None else f"{ratio:.3f}", str(step.get("interval") or "-"),
                     str(step.get("verdict") or "-"), str(step.get("mark") or "-"),
                     str(step.get("runs") or "-")])
    return Table(["step", "role", "after good", "sha", "subject", "ratio", "interval", "verdict", "mark",
                  "runs"], rows)


def bisect_summary_lines(record: dict[str, Any]) -> list[str]:
    """The bisect's range, gate, status and what it found."""
    spec = spec_from_json(record.get("spec"))
    gate = spec.gates[0]
    lines = [f"good: {record.get('good')} ({record.get('good_ref')}); bad: {record.get('bad')} "
             f"({record.get('bad_ref')}); {len(record.get('commits') or [])} commits after good",
             f"case: {spec.cases[0]}; gate: {gate.metric} {gate.describe()} at {gate.confidence:g} "
             "confidence",
             f"status: {record.get('status')}"]
    if record.get("first_bad"):
        lines.append(f"first bad commit: {record['first_bad']} {record.get('first_bad_subject', '')}")
    if record.get("remaining") and not record.get("first_bad"):
        lines.append(f"remaining: {len(record['remaining'])} commits: "
                     + ", ".join(sha[:12] for sha in record["remaining"]))
    if record.get("skipped"):
        lines.append("skipped (bench failed): " + ", ".join(sha[:12] for sha in record["skipped"]))
    return lines


def ratio_plot(record: dict[str, Any]) -> figure:
    """The ratio (and interval) of every tested commit over its place after good (good = 0)."""
    steps = [s for s in record.get("steps") or [] if s.get("index") is not None]
    commits = len(record.get("commits") or [])
    fig = figure(title="candidate / good ratio by place in the first-parent history", width=760, height=340,
                 tools="pan,box_zoom,wheel_zoom,reset,save", x_range=(-0.5, commits + 0.5))
    fig.xaxis.axis_label, fig.yaxis.axis_label = "commits after good (first-parent order)", "ratio to good"
    data = {"index": [s["index"] + 1 for s in steps], "ratio": [s.get("ratio") for s in steps],
            "low": [s.get("low") for s in steps], "high": [s.get("high") for s in steps],
            "sha": [str(s.get("sha", ""))[:12] for s in steps],
            "subject": [str(s.get("subject")) for s in steps],
            "mark": [str(s.get("mark")) for s in steps],
            "color": [MARK_COLORS.get(str(s.get("mark")), "#1f77b4") for s in steps]}
    source = ColumnDataSource(data)
    fig.add_layout(Whisker(source=source, base="index", lower="low", upper="high", line_color="#555"))
    fig.scatter("index", "ratio", source=source, color="color", size=10)
    fig.add_tools(HoverTool(tooltips=[("sha", "@sha"), ("subject", "@subject"), ("ratio", "@ratio{0.000}"),
                                      ("interval", "[@low{0.000}, @high{0.000}]"), ("mark", "@mark")]))
    gate = spec_from_json(record.get("spec")).gates[0]
    for _, bound in gate.bounds:
        fig.add_layout(Span(location=bound, dimension="width", line_dash="dashed", line_color="#999"))
    first_bad = record.get("first_bad")
    shas = [c.get("sha") for c in record.get("commits") or []]
    if first_bad in shas:
        fig.add_layout(Span(location=shas.index(first_bad) + 0.5, dimension="height", line_color="#d62728"))
    return fig


def bisect_page(record: dict[str, Any]) -> Page:
    page = Page(f"shasweep bisect: {record.get('bisect_id')}")
    page.items(bisect_summary_lines(record))
    page.figures([ratio_plot(record)])
    page.heading("Steps")
    page.table(bisect_steps_table(record))
    return page
