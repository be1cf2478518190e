"""Bokeh figures of runs: a per-run value (throughput, a whole-run time) by side, phase breakdown,
per-step timeline, a metric over time, a lockstep round's blocks. Axis labels name the metric and its unit.

Every function takes plain DataFrames in the results schema (docs/design.md, "Results") and returns one
figure; none of them reads files.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
from bokeh.models import BoxAnnotation, ColumnDataSource, HoverTool, Span
from bokeh.palettes import Category10, Category20
from bokeh.plotting import figure
from bokeh.transform import jitter

from orchestrator.analysis.block_pairs import parse_blocks
from orchestrator.capabilities import CPU_PHASES
from orchestrator.contract import block_spans
from orchestrator.printable import printable

# Stacked in this order; update_state_ms is replaced by its update_state.* breakdown when reported.
BREAKDOWN_PHASES: tuple[str, ...] = (
    "physics_ms", "update_state_ms", "reset_done_ms", "d2h_ms", "apply_action_ms", "policy_ms", "replay_ms",
)
SUBPHASE_PREFIX = "update_state."
UPDATE_STATE_REST = "update_state.other_ms"
WIDTH, HEIGHT = 560, 320
RUN_FIELDS: list[str] = ["side", "run_key", "sha", "status", "repeat", "color"]
_UNITS: tuple[tuple[str, str], ...] = (("_ms", "ms"), ("_mib", "MiB"), ("_s", "s"))  # metric suffix, unit


def side_colors(sides: list[str]) -> dict[str, str]:
    """A fixed color per side, in declaration order."""
    palette = Category10[10]
    return {side: palette[i % len(palette)] for i, side in enumerate(sides)}


def per_run_plot(runs: pd.DataFrame, sides: list[str], title: str, *, metric: str = "throughput",
                 paired: bool = False, y_label: str) -> figure:
    """Per-run ``metric`` by side: a box (quartiles, min-max whiskers, median) and the runs as points.

    ``runs`` holds one case's runs; only ``status == ok`` runs make the boxes, runs that failed
    their audit but reported the metric are drawn as red crosses. ``paired``: the runs of one
    round (``repeat``) are joined by a line across the sides. Runs flagged in a ``disturbed``
    column get an orange ring.
    """
    fig = _figure(title, x_range=sides, y_label=y_label)
    if metric not in runs:
        return fig
    fields = [*RUN_FIELDS, metric]
    ok = runs[(runs["status"] == "ok") & runs[metric].notna()]
    quartiles = ok.groupby("side")[metric].quantile([0.0, 0.25, 0.5, 0.75, 1.0]).unstack()
    boxes = ColumnDataSource({"side": list(quartiles.index), **{f"q{int(q * 100)}": quartiles[q].tolist()
                                                               for q in quartiles.columns}})
    if len(quartiles):
        fig.segment("side", "q0", "side", "q100", source=boxes, color="#555")
        fig.vbar("side", 0.5, "q25", "q75", source=boxes, fill_color="#e8e8e8", line_color="#555")
        fig.rect("side", "q50", 0.5, 0.001, source=boxes, line_color="#222", line_width=2)
    if paired:
        _join_rounds(fig, ok, sides, metric)
    colors = side_colors(sides)
    points = ok.assign(color=ok["side"].map(colors).fillna("#999"))
    x = "side" if paired else jitter("side", width=0.25, range=fig.x_range)
    fig.scatter(x, metric, source=_source(points, fields), color="color", size=8, alpha=0.8,
                legend_label="ok run")
    if "disturbed" in ok:
        disturbed = ok[ok["disturbed"].fillna(False).astype(bool)]
        if len(disturbed):
            fig.scatter("side", metric, source=_source(disturbed, fields), marker="circle",
                        fill_alpha=0, line_color="#ff7f0e", line_width=2, size=15, legend_label="disturbed")
    rejected = runs[(runs["status"] == "audit_failed") & runs[metric].notna()]
    if len(rejected):
        fig.scatter("side", metric, source=_source(rejected, fields), marker="x", color="#d62728",
                    size=12, line_width=2, legend_label="failed its audit")
    fig.add_tools(HoverTool(tooltips=[("run", "@run_key"), ("round", "@repeat"), ("sha", "@sha"),
                                      (metric, f"@{{{metric}}}{{0,0.[000]}}"), ("status", "@status")]))
    fig.legend.location = "bottom_right"
    _pad_y(fig, runs[metric])
    return fig


def _join_rounds(fig: figure, ok: pd.DataFrame, sides: list[str], metric: str) -> None:
    """A thin grey line per round through its runs, in side order."""
    xs, ys = [], []
    for _, round_runs in ok.groupby("repeat"):
        by_side = round_runs.groupby("side")[metric].first().reindex(sides).dropna()
        if len(by_side) >= 2:
            xs.append(list(by_side.index))
            ys.append(by_side.tolist())
    if xs:
        fig.multi_line(xs, ys, color="#888", alpha=0.6, line_width=1, legend_label="one round")


def _pad_y(fig: figure, values: pd.Series) -> None:
    """A y range from 0 to above the highest value, so no point sits on (or past) the frame."""
    finite = pd.to_numeric(values, errors="coerce").dropna()
    if len(finite):
        fig.y_range.end = float(finite.max()) * 1.1 or 1.0


def breakdown_phases(runs: pd.DataFrame) -> list[str]:
    """The phases a breakdown stacks: envruntime's, with update_state split into its sub-phases; for a
    bench that reports none of those, every ``*_ms`` phase it reported but its CPU time, which is a
    figure of the whole step, not a part of it."""
    if not any(p in runs and runs[p].notna().any() for p in BREAKDOWN_PHASES):
        return [c for c in runs.columns
                if c.endswith("_ms") and c not in CPU_PHASES and runs[c].notna().any()]
    subphases = sorted(c for c in runs.columns
                       if c.startswith(SUBPHASE_PREFIX) and c.endswith("_ms") and runs[c].notna().any())
    phases = []
    for phase in BREAKDOWN_PHASES:
        phases += [*subphases, UPDATE_STATE_REST] if phase == "update_state_ms" and subphases else [phase]
    return phases


def phase_medians(runs: pd.DataFrame, sides: list[str]) -> pd.DataFrame:
    """Median per-run mean of every breakdown phase, one row per side; phases that are 0 or not
    reported on every side are left out."""
    ok = runs[runs["status"] == "ok"].copy()
    phases = breakdown_phases(ok)
    if UPDATE_STATE_REST in phases:
        parts = [p for p in phases if p.startswith(SUBPHASE_PREFIX) and p != UPDATE_STATE_REST]
        ok[UPDATE_STATE_REST] = (ok["update_state_ms"] - ok[parts].fillna(0.0).sum(axis=1)).clip(lower=0.0)
    for phase in phases:
        if phase not in ok:
            ok[phase] = float("nan")
    medians = ok.groupby("side")[phases].median().reindex(sides).fillna(0.0)
    return medians.loc[:, (medians != 0.0).any()]


def breakdown_plot(runs: pd.DataFrame, sides: list[str], title: str,
                   y_label: str = "phase time (ms per step, median of run means)") -> figure:
    """Stacked bar per side of the median phase times."""
    medians = phase_medians(runs, sides)
    phases = list(medians.columns)
    palette = Category20[20]
    fig = _figure(title, x_range=sides, y_label=y_label)
    source = ColumnDataSource({"side": sides, **{p: medians[p].tolist() for p in phases}})
    fig.vbar_stack(phases, x="side", width=0.6, source=source, legend_label=phases,
                   color=[palette[i % len(palette)] for i in range(len(phases))])
    fig.add_tools(HoverTool(tooltips=[("side", "@side"), ("phase", "$name"), ("ms", "@$name{0.000}")]))
    if phases:  # no ok run of this case (e.g. a cancelled sweep): an empty chart, no legend
        fig.legend.location = "top_left"
        fig.legend.label_text_font_size = "8pt"
        fig.add_layout(fig.legend[0], "right")
        fig.width = WIDTH + 220
    return fig


def timeline_plot(steps: pd.DataFrame, runs: pd.DataFrame, sides: list[str], phase: str,
                  title: str, x_label: str = "step") -> figure:
    """``phase`` per step of every run, one line per run colored by side, warm-up steps shaded.

    ``steps`` is the long steps table of one case's runs restricted to ``phase``.
    """
    # log scale: the first warm-up steps (JIT compiles) can be 100x a measured step
    fig = _figure(title, y_label=f"{phase} (ms, log scale)", x_label=x_label, y_axis_type="log")
    warmup = steps.loc[steps["warmup"], "step"]
    if len(warmup):
        fig.add_layout(BoxAnnotation(left=-0.5, right=float(warmup.max()) + 0.5, fill_color="#999",
                                     fill_alpha=0.15))
    colors = side_colors(sides)
    side_of = runs.set_index("run_key")["side"].to_dict()
    for run_key, run_steps in steps.sort_values("step").groupby("run_key", sort=True):
        side = side_of.get(run_key, "?")
        fig.line(run_steps["step"], run_steps["ms"], color=colors.get(side, "#999"), alpha=0.7,
                 legend_label=str(side))
    fig.legend.location = "top_right"
    return fig


def history_plot(history: pd.DataFrame, metric: str, title: str,
                 marks: Sequence[pd.Timestamp] = ()) -> figure:
    """``metric`` of every run over its start time; ok runs as dots, one series per params/command
    label (``settings``), joined in time order; others as crosses; ``marks`` (change points) as
    vertical lines."""
    fig = _figure(title, x_axis_type="datetime", y_label=metric_label(metric), x_label="run started (UTC)")
    for mark in marks:
        fig.add_layout(Span(location=mark.to_pydatetime(), dimension="height", line_color="#9467bd",
                            line_dash="dashed", line_width=2))
    series = list(dict.fromkeys(history["settings"]))
    colors = side_colors(series)
    fields = ["started_at", "sweep_id", "side", "sha", "status", "settings", metric]
    for label in series:
        mine = history[(history["settings"] == label) & (history["status"] == "ok")]
        fig.line("started_at", metric, source=_source(mine, fields), color=colors[label], alpha=0.5)
        fig.scatter("started_at", metric, source=_source(mine, fields), color=colors[label], size=8,
                    legend_label=label)
    others = history[history["status"] != "ok"]
    if len(others):
        fig.scatter("started_at", metric, source=_source(others, fields), marker="x", color="#d62728",
                    size=11, line_width=2, legend_label="not ok")
    fig.add_tools(HoverTool(tooltips=[("sweep", "@sweep_id"), ("side", "@side"), ("sha", "@sha"),
                                      ("params/command", "@settings"), (metric, f"@{{{metric}}}"),
                                      ("status", "@status")]))
    fig.legend.location = "bottom_left"
    _pad_y(fig, history[metric])
    return fig


def metric_label(metric: str) -> str:
    """An axis label naming ``metric`` and its unit: ``*_ms`` phases in ms, ``*_mib`` in MiB, the
    throughput per second in the bench's own unit."""
    if metric == "throughput":
        return "throughput (per s, in the bench's unit)"
    unit = next((unit for suffix, unit in _UNITS if metric.endswith(suffix)), None)
    return f"{metric} ({unit})" if unit else metric


def _figure(title: str, *, y_label: str, x_label: str = "", **kwargs: object) -> figure:
    fig = figure(title=printable(title), width=WIDTH, height=HEIGHT,
                 tools="pan,box_zoom,wheel_zoom,reset,save", **kwargs)
    fig.yaxis.axis_label, fig.xaxis.axis_label = y_label, x_label
    if kwargs.get("y_axis_type") != "log":
        fig.y_range.start = 0
    return fig


def _source(frame: pd.DataFrame, columns: list[str]) -> ColumnDataSource:
    """A data source of ``columns`` of ``frame``, missing text shown as "-" in tooltips."""
    data = {}
    for name in columns:
        values = frame[name] if name in frame else pd.Series([None] * len(frame), dtype=object)
        is_text = values.dtype == object or pd.api.types.is_string_dtype(values)
        data[name] = values.astype(object).where(values.notna(), "-").tolist() if is_text else values.tolist()
    return ColumnDataSource(data)


def lockstep_blocks_plot(runs: pd.DataFrame, sides: list[str], title: str) -> figure | None:
    """The blocks of one lockstep round (``runs``: its runs) on a timeline (``contract.block_spans``),
    one lane per side, warm-up blocks faint; None when the runs kept no blocks."""
    blocks = [block | {"side": run.side} for run in runs.itertuples(index=False)
              for block in parse_blocks(getattr(run, "blocks", None))]
    spans = block_spans(blocks)
    if not spans:
        return None
    colors = side_colors(sides)
    source = ColumnDataSource({
        "left": [s["left"] for s in spans], "right": [s["right"] for s in spans],
        "bottom": [(s["side"], -0.35) for s in spans], "top": [(s["side"], 0.35) for s in spans],
        "color": [colors.get(s["side"], "#999") for s in spans],
        "alpha": [0.3 if s["warmup"] else 0.9 for s in spans], "side": [s["side"] for s in spans],
        "block": [s["block"] for s in spans],
        "cycle": ["warm-up" if s["warmup"] else str(s["cycle"]) for s in spans],
        "wall_ms": [1000 * (s["wall_s"] or 0.0) for s in spans]})
    fig = figure(title=printable(title), y_range=[s for s in sides if s in set(runs["side"])],
                 height=HEIGHT // 2 + 60, width=1120, x_axis_label="s since the round's first block",
                 tools="pan,wheel_zoom,box_zoom,reset")
    fig.quad(left="left", right="right", bottom="bottom", top="top", color="color", alpha="alpha",
             source=source)
    fig.add_tools(HoverTool(tooltips=[("side", "@side"), ("block", "@block"), ("cycle", "@cycle"),
                                      ("wall", "@wall_ms{0.0} ms")]))
    return fig
