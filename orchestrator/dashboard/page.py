"""The ``/shasweep`` Bokeh page of the Dask dashboard: the sweep's queue, live phases, throughput, and
for a lockstep sweep the blocks of the running round on a timeline, one lane per side.

Served by the scheduler's dashboard; it reads the ``BoardPlugin`` state of that scheduler every
``REFRESH_MS`` and redraws only when the shown sweep changed. The header, the table and the charts
are all drawn from one snapshot, and the header's running run is the table's (``live_run``), so they
never disagree. Chart ranges are set from the data with padding (throughput from 0, every planned
run on the x axis), never auto-fitted to one point.
"""

from __future__ import annotations

import html
import statistics
from datetime import timedelta

from bokeh.document import Document
from bokeh.layouts import column, row
from bokeh.models import ColumnDataSource, DataTable, Div, Range1d, Select, StringFormatter, TableColumn
from bokeh.palettes import Category10_10
from bokeh.plotting import figure
from distributed import Scheduler

from orchestrator.contract import AUDIT_FAILED, block_spans
from orchestrator.contract import STATUSES as FINAL_STATUSES
from orchestrator.dashboard.board import CHART_PHASES, LIVE_STATUSES, SweepBoard, eta_seconds
from orchestrator.dashboard.lanes import format_lane
from orchestrator.dashboard.plugin import board_of

REFRESH_MS = 500
PAD = 0.1  # of a chart's data span, above the highest value
CASE_PX_PER_CHAR = 7.5
LATEST = "(latest)"
STATUS_COLORS = {"queued": "#777777", "waiting": "#c77c00", "running": "#1f6fd1", "ok": "#1a8a3a",
                 "failed": "#c0392b", "timeout": "#c0392b", "cancelled": "#8e44ad",
                 AUDIT_FAILED: "#c0392b"}
TABLE_FIELDS: tuple[str, ...] = ("order", "side", "case", "repeat", "status", "progress", "throughput",
                                 "ran_in", "error", "status_color")
BLOCK_FIELDS: tuple[str, ...] = ("left", "right", "bottom", "top", "color", "alpha", "side")


class BoardPage:
    """The widgets of one browser session and how they are refreshed from the board."""

    def __init__(self, board: SweepBoard) -> None:
        self.board = board
        self.shown: tuple[str | None, int] = (None, -1)  # (sweep id, version) currently drawn
        self.select = Select(title="sweep", value=LATEST, options=[LATEST], width=420)
        self.summary = Div(text="no sweep yet", width=900)
        self.hosts = Div(text="", width=900)
        self.lanes = Div(text="", width=900)  # one line per bench host of the sweep
        self.runs = ColumnDataSource({name: [] for name in TABLE_FIELDS})
        self.phases = ColumnDataSource({"step": [], **{name: [] for name in CHART_PHASES}})
        self.throughput = ColumnDataSource({"order": [], "throughput": [], "side": [], "color": []})
        self.blocks = ColumnDataSource({name: [] for name in BLOCK_FIELDS})
        self._case_column = TableColumn(field="case", title="case", width=220)
        self._phase_fig, self._throughput_fig = self._phase_chart(), self._throughput_chart()
        self._timeline_fig = self._timeline_chart()
        self.root = column(row(self.select), self.summary, self.lanes, self._table(), row(self._phase_fig,
                           self._throughput_fig), self._timeline_fig, self.hosts, sizing_mode="stretch_width")

    def update(self) -> None:
        """Refresh the sweep list and, if the shown sweep changed, every widget."""
        ids = self.board.sweep_ids()
        self.select.options = [LATEST, *ids]
        wanted = None if self.select.value == LATEST else self.select.value
        snap = self.board.snapshot(wanted)
        key = (snap["sweep_id"], snap["version"]) if snap else (None, -1)
        if key == self.shown:
            return
        self.shown = key
        self.hosts.text = _hosts_html(self.board.hosts)
        if snap is None:
            self.summary.text = "no sweep yet: start one with <code>shasweep run SWEEP.yaml</code>"
            return
        self.summary.text = summary_html(snap)
        self.lanes.text = "<br>".join(html.escape(format_lane(lane)) for lane in snap.get("lanes", []))
        runs = snap["runs"]
        self.runs.data = table_data(snap)
        longest = max((len(r["case"]) for r in runs), default=0)
        self._case_column.width = max(220, int(CASE_PX_PER_CHAR * longest))  # the whole case visible
        self.phases.data = {name: snap["phases"][name] for name in ("step", *CHART_PHASES)}
        _fit(self._phase_fig, [0, *snap["phases"]["step"]],
             [v for name in CHART_PHASES for v in snap["phases"][name]])
        done = [r for r in runs if r["status"] == "ok" and r["throughput"] is not None]
        sides = list(dict.fromkeys(r["side"] for r in runs))
        self.throughput.data = {
            "order": [r["order"] for r in done], "throughput": [r["throughput"] for r in done],
            "side": [r["side"] for r in done],
            "color": [Category10_10[sides.index(r["side"]) % 10] for r in done],
        }
        _fit(self._throughput_fig, [r["order"] for r in runs], [r["throughput"] for r in done])
        lanes = timeline_data(snap, sides)
        self.blocks.data = lanes
        self._timeline_fig.visible = bool(lanes["left"])
        if lanes["left"]:
            case, repeat = snap["round"]
            self._timeline_fig.title.text = f"lockstep round {repeat} of {case}: blocks per side"
            self._timeline_fig.x_range.start, self._timeline_fig.x_range.end = 0.0, max(lanes["right"]) * 1.02
            self._timeline_fig.y_range.factors = sides

    def _table(self) -> DataTable:
        status = StringFormatter(text_color="status_color", font_style="bold")
        columns = [TableColumn(field="order", title="#", width=40), TableColumn(field="side", title="side"),
                   self._case_column,
                   TableColumn(field="repeat", title="repeat", width=60),
                   TableColumn(field="status", title="status", formatter=status),
                   TableColumn(field="progress", title="steps"),
                   TableColumn(field="throughput", title="throughput (env steps/s)"),
                   TableColumn(field="ran_in", title="ran in", width=90),
                   TableColumn(field="error", title="error", width=400)]
        return DataTable(source=self.runs, columns=columns, height=260, index_position=None,
                         sizing_mode="stretch_width")

    def _timeline_chart(self) -> figure:
        fig = figure(title="lockstep round: blocks per side", x_axis_label="s since the round's first block",
                     y_range=[""], height=200, width=1260, tools="pan,wheel_zoom,box_zoom,reset",
                     x_range=Range1d(0.0, 1.0), visible=False)
        fig.quad(left="left", right="right", bottom="bottom", top="top", color="color", alpha="alpha",
                 source=self.blocks)
        return fig

    def _phase_chart(self) -> figure:
        fig = figure(title="current run: phase timings per vector step", x_axis_label="step",
                     y_axis_label="ms", height=320, width=700, tools="pan,wheel_zoom,box_zoom,reset",
                     x_range=Range1d(-0.5, 1.0), y_range=Range1d(0.0, 1.0))
        for name, color in zip(CHART_PHASES, Category10_10, strict=False):
            fig.line("step", name, source=self.phases, color=color, legend_label=name, line_width=2)
        fig.add_layout(fig.legend[0], "right")
        return fig

    def _throughput_chart(self) -> figure:
        fig = figure(title="finished runs: throughput per side", x_axis_label="run #",
                     y_axis_label="env steps/s", height=320, width=560, tools="pan,wheel_zoom,box_zoom,reset",
                     x_range=Range1d(-0.5, 1.0), y_range=Range1d(0.0, 1.0))
        fig.scatter("order", "throughput", source=self.throughput, color="color", size=10,
                    legend_field="side")
        fig.legend.location = "bottom_right"
        return fig


def sweep_doc(scheduler: Scheduler, extra: dict, doc: Document) -> None:
    """The ``/shasweep`` application (the signature ``distributed.dashboard`` expects)."""
    from distributed.dashboard.components.scheduler import BOKEH_THEME, env

    doc.title = "Dask: shasweep"
    board = board_of(scheduler)
    if board is None:
        doc.add_root(Div(text="the shasweep board plugin is not installed on this scheduler "
                              "(start it with <code>--preload orchestrator.dashboard</code>)"))
    else:
        page = BoardPage(board)
        page.update()
        doc.add_root(page.root)
        doc.add_periodic_callback(page.update, REFRESH_MS)
    doc.template = env.get_template("simple.html")
    doc.template_variables.update(extra)
    doc.theme = BOKEH_THEME


def live_run(snap: dict) -> dict | None:
    """The run the table shows waiting or running (the latest in plan order if several)."""
    live = [r for r in snap["runs"] if r["status"] in LIVE_STATUSES]
    return max(live, key=lambda r: r["order"]) if live else None


def table_data(snap: dict) -> dict[str, list]:
    """The run table's columns, one row per run in plan order."""
    runs = snap["runs"]
    return {
        "order": [r["order"] for r in runs], "side": [r["side"] for r in runs],
        "case": [r["case"] for r in runs], "repeat": [r["repeat"] for r in runs],
        "status": [r["status"] for r in runs], "progress": [_progress(r) for r in runs],
        "throughput": [_number(r["throughput"]) for r in runs],
        "ran_in": [r.get("ran_in") or "" for r in runs],
        "error": [(r["error"] or "").splitlines()[0] if r["error"] else "" for r in runs],
        "status_color": [STATUS_COLORS.get(r["status"], "#000000") for r in runs],
    }


def summary_html(snap: dict) -> str:
    """The header: state, runs done (counted from the same rows the table shows), the running run,
    the ETA, each side's median throughput, why the sweep stopped."""
    runs = snap["runs"]
    finished = [r for r in runs if r["status"] in FINAL_STATUSES]
    parts = [f"<b>{html.escape(snap['sweep_id'])}</b>: {snap['state']}, "
             f"{len(finished)}/{len(runs)} runs done"]
    counts: dict[str, int] = {}
    for run in runs:
        counts[run["status"]] = counts.get(run["status"], 0) + 1
    parts += [f"{n} {status}" for status, n in counts.items() if n and status != "ok"]
    current = live_run(snap)
    if current is not None:
        parts.append(f"{current['status']} #{current['order']} {html.escape(current['side'])} "
                     f"{html.escape(current['case'])} {_progress(current)}")
    walls = [r["wall_s"] for r in finished if isinstance(r.get("wall_s"), int | float)]
    eta = eta_seconds(walls, len(runs) - len(finished)) if snap["state"] == "running" else None
    if eta is not None:
        parts.append(f"ETA {timedelta(seconds=round(eta))} (mean run {statistics.fmean(walls):.1f} s)")
    lines = [", ".join(parts)]
    by_side: dict[str, list[float]] = {}
    for run in snap["runs"]:
        if run["status"] == "ok" and run["throughput"] is not None:
            by_side.setdefault(run["side"], []).append(run["throughput"])
    lines += [f"{html.escape(side)}: median throughput {statistics.median(values):,.1f} (n={len(values)})"
              for side, values in by_side.items()]
    waits = [r for r in runs if isinstance(r.get("quiet_wait_s"), int | float)]
    if waits:
        missed = sum(r.get("quiet_met") is False for r in waits)
        lines.append(f"quiet waits: longest {max(r['quiet_wait_s'] for r in waits):.1f} s, "
                     f"{missed} of {len(waits)} runs started without a quiet second")
    if snap["stop_reason"]:
        lines.append(f"stopped: {html.escape(snap['stop_reason'])}")
    return "<br>".join(lines)


def timeline_data(snap: dict, sides: list[str]) -> dict[str, list]:
    """The current lockstep round's blocks as quads (``contract.block_spans``), one lane per side (a
    categorical y of ``sides``), warm-up blocks faint."""
    spans = [s for s in block_spans(snap.get("blocks") or []) if s["side"] in sides]
    return {"left": [s["left"] for s in spans], "right": [s["right"] for s in spans],
            "bottom": [(s["side"], -0.35) for s in spans], "top": [(s["side"], 0.35) for s in spans],
            "color": [Category10_10[sides.index(s["side"]) % 10] for s in spans],
            "alpha": [0.3 if s["warmup"] else 0.9 for s in spans], "side": [s["side"] for s in spans]}


def _fit(fig: figure, xs: list[float], ys: list[float | None]) -> None:
    """Set ``fig``'s ranges to hold every x (half a step of margin) and every y from 0 to above the
    highest, so one point is never a hairline axis and a later point is never cut off."""
    finite_x = [float(x) for x in xs if x is not None]
    finite_y = [float(y) for y in ys if y is not None]
    fig.x_range.start = min(finite_x, default=0.0) - 0.5
    fig.x_range.end = max(finite_x, default=1.0) + 0.5
    fig.y_range.start = 0.0
    fig.y_range.end = (max(finite_y, default=0.0) * (1 + PAD)) or 1.0


def _hosts_html(hosts: dict[str, dict]) -> str:
    return "<br>".join(
        f"bench worker {html.escape(addr)}: {html.escape(str(h.get('hostname')))}, "
        f"{html.escape(str(h.get('cpu_model')))}, CPUs {html.escape(str(h.get('affinity')))}, "
        f"GPU {html.escape(str(h.get('gpu_name')))}" for addr, h in hosts.items())


def _progress(run: dict) -> str:
    if run["total"]:
        return f"{run['done']}/{run['total']}"
    return str(run["done"]) if run["done"] else ""


def _number(value: float | None) -> str:
    return "" if value is None else f"{value:,.1f}"
