"""The report's lockstep section: which order each case ran in, each round's block-pair ratios, the
waits for a quiet host, and (HTML) a round's blocks on a timeline, one lane per side."""

from __future__ import annotations

import statistics

import pandas as pd
from bokeh.models import ColumnDataSource, HoverTool
from bokeh.plotting import figure

from orchestrator.analysis.lockstep import LockstepView, parse_blocks
from orchestrator.contract import block_spans
from orchestrator.render.plots import HEIGHT, side_colors
from orchestrator.render.tables import Table

LOCKSTEP_NOTE = ("A lockstep round keeps every side's process resident and gives the host to one at a "
                 "time, one block of steps each; a side's block and the baseline's of the same cycle ran "
                 "seconds apart (a block pair). A gate reads each round as the median of its block pairs' "
                 "ratios; the runs' ratio (their whole throughputs) is shown beside it.")


def order_lines(view: LockstepView) -> list[str]:
    """Per case, the order its runs ran in and, where it fell back, why; the quiet waits."""
    lines = []
    for case, orders in view.orders.items():
        ran = ", ".join(f"{n} runs {order}" for order, n in sorted(orders.items()))
        reason = view.fallbacks.get(case)
        lines.append(f"{case}: {ran}" + (f" (fell back: {reason})" if reason else ""))
    if waits := view.quiet_waits:
        lines.append(f"quiet waits: {len(waits)} runs, {sum(waits):.1f} s in all, longest "
                     f"{max(waits):.1f} s; {view.quiet_missed} started without a quiet second")
    return lines


def pairs_table(view: LockstepView) -> Table:
    """One row per (case, side, round): the block pairs' median ratio and range, the runs' ratio."""
    rows = []
    for found in view.rounds:
        pairs = found.pairs
        rows.append([found.case, found.side, str(found.repeat), str(len(pairs)),
                     f"{statistics.median(pairs):.4f}" if pairs else "-",
                     f"[{min(pairs):.4f}, {max(pairs):.4f}]" if pairs else "-",
                     "-" if found.runs_ratio is None else f"{found.runs_ratio:.4f}"])
    return Table(["case", "side", "round", "block pairs", "median pair ratio", "pair ratios [min, max]",
                  "runs' ratio"], rows)


def blocks_plot(runs: pd.DataFrame, sides: list[str], title: str) -> figure | None:
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
    fig = figure(title=title, y_range=[s for s in sides if s in set(runs["side"])], height=HEIGHT // 2 + 60,
                 width=1120, x_axis_label="s since the round's first block",
                 tools="pan,wheel_zoom,box_zoom,reset")
    fig.quad(left="left", right="right", bottom="bottom", top="top", color="color", alpha="alpha",
             source=source)
    fig.add_tools(HoverTool(tooltips=[("side", "@side"), ("block", "@block"), ("cycle", "@cycle"),
                                      ("wall", "@wall_ms{0.0} ms")]))
    return fig
