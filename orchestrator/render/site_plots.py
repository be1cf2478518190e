"""The results site's Bokeh figures: a sparkline per case x metric, and per case page the series
across commits (or over time) with each sweep's gate interval as a band and the change points
marked.

The series, its lines and the bands each have one data source with ``side``, ``host`` and
``settings`` columns and a ``BooleanFilter`` (named ``site-src-<i>`` / ``site-filter-<i>``) that
the page's filters set; every glyph of a source draws through that filter. A point, a band or a
change point's marker opens its sweep's page when clicked (``url``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from bokeh.models import (
    BasicTicker,
    BooleanFilter,
    CDSView,
    ColumnDataSource,
    HoverTool,
    Line,
    OpenURL,
    Plot,
    Range1d,
    Scatter,
    Span,
    TapTool,
)
from bokeh.plotting import figure

from orchestrator.analysis.site_model import MetricHistory, ShiftSummary
from orchestrator.printable import printable
from orchestrator.render.history import change_text
from orchestrator.render.plots import metric_label, side_colors

SPARK_WIDTH, SPARK_HEIGHT = 180, 40
WIDTH, HEIGHT, GATE_HEIGHT = 1100, 340, 220
AXIS_SPACE = 90  # pixels left of both plots of a metric, so that their frames line up over one x range
VERDICT_COLORS: dict[str, str] = {"PASS": "#2ca02c", "FAIL": "#d62728", "INCONCLUSIVE": "#e6a700",
                                  "NO DATA": "#7f7f7f", "waived": "#6a51a3"}
SHIFT_COLOR = "#9467bd"
POINT_KEYS: tuple[str, ...] = ("x_commit", "x_time", "value", "low", "high", "n", "not_ok", "sweep_id",
                               "side", "host", "settings", "sha", "color", "url")
BAND_KEYS: tuple[str, ...] = ("x_commit", "x_time", "center", "height", "low", "high", "ratio", "confidence",
                              "verdict", "bound", "color", "sweep_id", "side", "host", "settings", "url")


def sparkline(recent: dict[str, list[float]], sides: list[str]) -> Plot:
    """Each side's latest per-sweep medians as a small line ending in a dot: a bare ``Plot`` (no axes,
    grids or tools: an index of many rows draws them all)."""
    values = [v for side in sides for v in recent.get(side, []) if v == v]
    low, high = (min(values), max(values)) if values else (0.0, 1.0)
    pad = (high - low) * 0.1 or abs(high) * 0.01 or 1.0
    longest = max((len(recent.get(side, [])) for side in sides), default=1)
    plot = Plot(width=SPARK_WIDTH, height=SPARK_HEIGHT, x_range=Range1d(-0.5, max(longest - 0.5, 0.5)),
                y_range=Range1d(low - pad, high + pad), toolbar_location=None, min_border=2,
                outline_line_color=None)
    colors = side_colors(sides)
    for side in sides:
        mine = recent.get(side, [])
        if mine:
            source = ColumnDataSource({"x": list(range(longest - len(mine), longest)), "y": mine})
            plot.add_glyph(source, Line(x="x", y="y", line_color=colors[side], line_width=1.5))
            plot.add_glyph(ColumnDataSource({"x": [longest - 1], "y": [mine[-1]]}),
                           Scatter(x="x", y="y", size=4, fill_color=colors[side], line_color=colors[side]))
    return plot


class FilteredSources:
    """The data sources a page's filters act on, numbered in the order they are made."""

    def __init__(self) -> None:
        self.count = 0

    def source(self, data: dict[str, list]) -> tuple[ColumnDataSource, BooleanFilter]:
        index = self.count
        self.count += 1
        rows = len(next(iter(data.values()))) if data else 0
        return (ColumnDataSource(data, name=f"site-src-{index}"),
                BooleanFilter(booleans=[True] * rows, name=f"site-filter-{index}"))


def metric_figures(history: MetricHistory, sides: list[str], commits: list[str], urls: dict[str, str],
                   sources: FilteredSources) -> dict[str, list[figure]]:
    """``{"commit": [series, gates], "time": [series, gates]}``: the two views of one case x metric,
    sharing their data (``urls``: sweep id -> the link of its page)."""
    colors = side_colors(sides)
    offsets = {side: 0.3 * (i / max(len(sides) - 1, 1) - 0.5) if len(sides) > 1 else 0.0
               for i, side in enumerate(sides)}
    points = _point_data(history.points, colors, offsets, urls)
    lines = _line_data(history.points, colors, offsets)
    bands = _band_data(history.bands, offsets, urls)
    marks = _mark_data(history, urls)
    shared = [sources.source(points), sources.source(lines), sources.source(bands)]
    views = {}
    for axis in ("commit", "time"):
        series = _series_figure(history, axis, shared[0], shared[1], marks, commits)
        gates = _gate_figure(history, axis, shared[2], series, commits)
        views[axis] = [series, gates]
    return views


def _x(axis: str) -> str:
    return "x_commit" if axis == "commit" else "x_time"


def _axis_type(axis: str) -> str:
    return "linear" if axis == "commit" else "datetime"


def _series_figure(history: MetricHistory, axis: str, points: tuple, lines: tuple, marks: dict,
                   commits: list[str]) -> figure:
    title = f"{history.case}: {history.metric} per sweep and side (median of its ok runs, bar: min-max)"
    fig = figure(title=printable(title), width=WIDTH, height=HEIGHT, x_axis_type=_axis_type(axis),
                 tools="pan,box_zoom,wheel_zoom,reset,save", name=f"series-{axis}",
                 min_border_left=AXIS_SPACE)
    fig.yaxis.axis_label = metric_label(history.metric)
    _label_x(fig, axis, commits)
    source, keep = lines
    fig.multi_line(f"xs_{axis}", "ys", source=source, view=CDSView(filter=keep), color="color", alpha=0.45)
    source, keep = points
    fig.segment(_x(axis), "low", _x(axis), "high", source=source, view=CDSView(filter=keep), color="color",
                alpha=0.5)
    dots = fig.scatter(_x(axis), "value", source=source, view=CDSView(filter=keep), color="color", size=7,
                       name=f"points-{axis}")
    fig.add_tools(HoverTool(renderers=[dots], tooltips=[
        ("sweep", "@sweep_id"), ("side", "@side"), ("sha", "@sha"), ("host", "@host"),
        ("params/command", "@settings"), ("median", "@value{0,0.[000]}"),
        ("min-max", "@low{0,0.[000]} - @high{0,0.[000]}"), ("ok runs", "@n"), ("not ok", "@not_ok")]))
    tapped = [dots]
    if marks["sweep_id"]:
        source = ColumnDataSource(marks)
        fig.segment(_x(axis), "bottom", _x(axis), "y", source=source, color=SHIFT_COLOR, line_dash="dashed",
                    line_width=1.5)
        markers = fig.scatter(_x(axis), "y", source=source, marker="inverted_triangle", size=14,
                              color=SHIFT_COLOR, name=f"changepoints-{axis}")
        fig.add_tools(HoverTool(renderers=[markers], tooltips=[
            ("change point", "@text"), ("sweep", "@sweep_id"), ("commits", "@commits")]))
        tapped.append(markers)
    fig.add_tools(TapTool(renderers=tapped, callback=OpenURL(url="@url", same_tab=True)))
    return fig


def _label_x(fig: figure, axis: str, commits: list[str]) -> None:
    """The x axis named, and in commit order its positions labelled with the commits' SHAs."""
    fig.xaxis.axis_label = "commit (in the order first measured)" if axis == "commit" else "started (UTC)"
    if axis == "commit":
        fig.xaxis.ticker = BasicTicker(min_interval=1)  # a tick between two commits would say a number
        fig.xaxis.major_label_overrides = {i: sha[:8] for i, sha in enumerate(commits)}
        fig.xaxis.major_label_orientation = 0.7


def _gate_figure(history: MetricHistory, axis: str, bands: tuple, series: figure, commits: list[str]
                 ) -> figure:
    title = f"{history.case}: each sweep's gate on {history.metric}, its decided interval of the ratio"
    fig = figure(title=printable(title), width=WIDTH, height=GATE_HEIGHT, x_range=series.x_range,
                 x_axis_type=_axis_type(axis), tools="pan,box_zoom,reset", name=f"gates-{axis}",
                 min_border_left=AXIS_SPACE)
    fig.yaxis.axis_label = "ratio to the baseline"
    _label_x(fig, axis, commits)
    fig.add_layout(Span(location=1.0, dimension="width", line_color="#555", line_dash="dotted"))
    source, keep = bands
    boxes = fig.rect(_x(axis), "center", width=10, width_units="screen", height="height", source=source,
                     view=CDSView(filter=keep), fill_color="color", line_color="color", fill_alpha=0.35,
                     name=f"bands-{axis}")
    fig.scatter(_x(axis), "ratio", source=source, view=CDSView(filter=keep), color="color", size=5)
    fig.add_tools(HoverTool(renderers=[boxes], tooltips=[
        ("sweep", "@sweep_id"), ("side", "@side"), ("gate", "@bound"), ("verdict", "@verdict"),
        ("ratio", "@ratio{0.000} [@low{0.000}, @high{0.000}] at @confidence{0.0%}")]))
    fig.add_tools(TapTool(renderers=[boxes], callback=OpenURL(url="@url", same_tab=True)))
    return fig


def _texts(values: pd.Series) -> list[str]:
    """Names as the page shows them (``printable``; unknown: ``-``): the filters compare these."""
    return [printable(v) for v in values.fillna("-").astype(str)]


def _floats(values: pd.Series) -> np.ndarray:
    """Numbers as an array: Bokeh sends it as one binary block, not a JSON list of numbers."""
    return pd.to_numeric(values, errors="coerce").to_numpy(dtype=float)


def _time_ms(values: pd.Series) -> np.ndarray:
    """Timestamps as Bokeh's datetime axis wants them (ms since the epoch); NaN where unknown."""
    stamps = pd.to_datetime(pd.Series(values), utc=True)
    return ((stamps - pd.Timestamp(0, tz="UTC")).dt.total_seconds() * 1000.0).to_numpy(dtype=float)


def _point_data(points: pd.DataFrame, colors: dict[str, str], offsets: dict[str, float],
                urls: dict[str, str]) -> dict[str, list]:
    if points.empty:
        return dict.fromkeys(POINT_KEYS, [])
    sides = points["side"].astype(str)
    return {"x_commit": _floats(points["commit"] + sides.map(offsets).fillna(0.0)),
            "x_time": _time_ms(points["started_at"]), "value": _floats(points["value"]),
            "low": _floats(points["low"]), "high": _floats(points["high"]), "n": _floats(points["n"]),
            "not_ok": _floats(points["not_ok"]),
            "sweep_id": _texts(points["sweep_id"]), "side": _texts(sides), "host": _texts(points["host"]),
            "settings": _texts(points["settings"]), "sha": _texts(points["sha"].fillna("-").str[:12]),
            "color": sides.map(colors).fillna("#999").tolist(),
            "url": points["sweep_id"].map(urls).fillna("").tolist()}


def _line_data(points: pd.DataFrame, colors: dict[str, str], offsets: dict[str, float]) -> dict[str, list]:
    """One line per side, host and params/command label through its points in sweep order."""
    data: dict[str, list] = {key: [] for key in ("xs_commit", "xs_time", "ys", "side", "host", "settings",
                                                 "color")}
    for (side, host, settings), mine in points.sort_values("started_at").groupby(
            ["side", "host", "settings"], sort=False):
        if len(mine) < 2:
            continue
        data["xs_commit"].append((mine["commit"] + offsets.get(str(side), 0.0)).tolist())
        data["xs_time"].append(_time_ms(mine["started_at"]))
        data["ys"].append(mine["value"].tolist())
        data["side"].append(printable(side))
        data["host"].append(printable(host))
        data["settings"].append(printable(settings))
        data["color"].append(colors.get(str(side), "#999"))
    return data


def _band_data(bands: pd.DataFrame, offsets: dict[str, float], urls: dict[str, str]) -> dict[str, list]:
    if bands.empty:
        return dict.fromkeys(BAND_KEYS, [])
    low, high = bands["low"].astype(float), bands["high"].astype(float)
    verdict = bands["verdict"].astype(str).where(~bands["waived"].astype(bool), "waived")
    shift = bands["side"].astype(str).map(offsets).fillna(0.0)
    return {"x_commit": _floats(bands["commit"].astype(float) + shift),
            "x_time": _time_ms(bands["started_at"]), "center": _floats((low + high) / 2),
            "height": _floats(high - low), "low": _floats(low), "high": _floats(high),
            "ratio": _floats(bands["ratio"]), "confidence": _floats(bands["confidence"]),
            "verdict": verdict.tolist(), "bound": _texts(bands["bound"]),
            "color": verdict.map(VERDICT_COLORS).fillna("#999").tolist(),
            "sweep_id": _texts(bands["sweep_id"]), "side": _texts(bands["side"]),
            "host": _texts(bands["host"]), "settings": _texts(bands["settings"]),
            "url": bands["sweep_id"].map(urls).fillna("").tolist()}


def _mark_data(history: MetricHistory, urls: dict[str, str]) -> dict[str, list]:
    """One marker per change point above the highest point, a dashed line down to the lowest."""
    top = float(history.points["high"].max()) * 1.05 if len(history.points) else 1.0
    shifts = history.shifts
    bottom = float(history.points["low"].min()) if len(history.points) else 0.0
    return {"x_commit": [float(v.commit) for v in shifts], "bottom": [bottom] * len(shifts),
            "x_time": _time_ms(pd.Series([v.started for v in shifts], dtype=object)),
            "y": [top] * len(shifts), "sweep_id": [printable(v.sweep_id) for v in shifts],
            "text": [shift_text(v) for v in shifts],
            "commits": [f"{(v.sha_before or '-')[:12]} .. {(v.sha_after or '-')[:12]}" for v in shifts],
            "url": [urls.get(v.sweep_id, "") for v in shifts]}


def shift_text(shift: ShiftSummary) -> str:
    """``side cand: -9.8% [-10.6%, -9.0%] (worse)``: the change of the level and its 95 % interval."""
    direction = "better" if shift.better else "worse"
    return f"side {printable(shift.side)}: {change_text(shift.change, shift.low, shift.high)} ({direction})"
