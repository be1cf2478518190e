"""The forest plot of one gate metric: every (case, side) ratio to the baseline with its interval,
the gate's bounds drawn as lines, each row coloured by its verdict."""

from __future__ import annotations

import math
from collections.abc import Sequence

from bokeh.models import ColumnDataSource, HoverTool, Span
from bokeh.plotting import figure

from orchestrator.analysis.verdicts import GateVerdict, Verdict, bounds
from orchestrator.spec.schema import GateSpec

VERDICT_COLORS: dict[Verdict, str] = {Verdict.PASS: "#1a8a3a", Verdict.FAIL: "#c0392b",
                                      Verdict.INCONCLUSIVE: "#c77c00", Verdict.NO_DATA: "#7f7f7f"}
WAIVED_COLOR = "#888888"
ROW_HEIGHT, MIN_HEIGHT, WIDTH = 34, 170, 560
PAD = 0.1  # of the drawn span, on each side, so no interval end or bound sits on the frame


def forest_plot(metric: str, verdicts: Sequence[GateVerdict], bounds: Sequence[float], title: str) -> figure:
    """One row per verdict of ``metric`` (``case · side``, gate number when several gates share it):
    the ratio as a dot, its interval as a bar; ``bounds`` as dashed vertical lines."""
    several = len({v.gate for v in verdicts}) > 1
    labels = [_label(v, several) for v in verdicts]
    fig = figure(title=title, y_range=list(reversed(labels)), width=WIDTH,
                 height=max(MIN_HEIGHT, 70 + ROW_HEIGHT * len(labels)), tools="save,reset",
                 x_axis_label=f"{metric}: candidate / baseline (ratio of medians)")
    rows = [_row(v, label) for v, label in zip(verdicts, labels, strict=True)]
    source = ColumnDataSource({key: [row[key] for row in rows] for key in rows[0]} if rows else {})
    if rows:
        fig.hbar(y="label", left="low", right="high", height=0.3, source=source, color="color", alpha=0.45)
        fig.scatter("ratio", "label", source=source, color="color", size=10)
        fig.add_tools(HoverTool(tooltips=[("", "@label"), ("ratio", "@ratio{0.000}"),
                                          ("interval", "@interval"), ("n", "@n"), ("verdict", "@verdict")]))
    for bound in bounds:
        fig.add_layout(Span(location=bound, dimension="height", line_dash="dashed", line_color="#333",
                            line_width=2))
    fig.add_layout(Span(location=1.0, dimension="height", line_color="#bbb", line_width=1))
    start, end = x_span(rows, bounds)
    fig.x_range.start, fig.x_range.end = start, end
    return fig


def x_span(rows: Sequence[dict], bounds: Sequence[float]) -> tuple[float, float]:
    """An x range holding every interval, ratio, bound and 1.0, padded on both sides."""
    values = [v for row in rows for v in (row["low"], row["high"], row["ratio"]) if math.isfinite(v)]
    values += [*bounds, 1.0]
    low, high = min(values), max(values)
    pad = max((high - low) * PAD, 0.01)
    return low - pad, high + pad


def _label(verdict: GateVerdict, several_gates: bool) -> str:
    label = f"{verdict.case} · {verdict.side}"
    if several_gates:
        label += f" (gate {verdict.gate})"
    return label


def _row(verdict: GateVerdict, label: str) -> dict:
    c = verdict.comparison
    waived = bool(getattr(verdict, "waived", False))
    has = c.has_interval
    return {"label": label, "ratio": c.ratio if math.isfinite(c.ratio) else float("nan"),
            "low": c.low if has else c.ratio, "high": c.high if has else c.ratio,
            "interval": f"{100 * c.confidence:g}% {bounds(c.low, c.high)}" if has else "none",
            "n": f"{c.n_candidate} vs {c.n_baseline}" + (" paired" if c.paired else ""),
            "verdict": f"{verdict.verdict} (waived)" if waived else verdict.verdict,
            "color": WAIVED_COLOR if waived else VERDICT_COLORS.get(verdict.verdict, "#000")}


def gate_bounds(spec_gates: Sequence[GateSpec], verdicts: Sequence[GateVerdict]) -> list[float]:
    """The bounds of the gates ``verdicts`` came from (``spec_gates``: the sweep's gates)."""
    found = []
    for index in sorted({v.gate for v in verdicts}):
        if index < len(spec_gates):
            found += [float(bound) for _, bound in spec_gates[index].bounds]
    return sorted(set(found))
