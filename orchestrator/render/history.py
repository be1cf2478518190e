"""``shasweep history --case CASE`` rendered: the model (``analysis.history_model.CaseHistory``) as
Markdown and as an HTML page. Each params/command label has its own median and its own series in the
plot; each change point is listed, marked in the table's ``shift`` column on the first run of the sweep
that starts a new level, and drawn on the plot."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import pandas as pd

from orchestrator.analysis import stats
from orchestrator.analysis.changepoints import Shift
from orchestrator.analysis.history_model import CaseHistory, settings_labels
from orchestrator.render.markdown import markdown_table, md_items, md_text
from orchestrator.render.tables import Table, format_number, one_line
from orchestrator.spec.commands import passes_variant

if TYPE_CHECKING:  # Bokeh: only for a page
    from orchestrator.render.page import Page


def settings_lines(history: pd.DataFrame) -> list[str]:
    """``P1: params {...}; command [...]`` for every label."""
    lines = []
    for key, label in settings_labels(history).items():
        params, _, command = key.partition(" | ")
        lines.append(f"{label}: params {params}; command {command}")
    return lines


def history_table(history: pd.DataFrame, metric: str, shifts: Sequence[Shift] = ()) -> Table:
    """One row per run: when, which sweep, side, SHA and variant, params/command label, status, the
    metric, any error; the first run of a sweep that starts a new level of its side says so in
    ``shift``."""
    starts = {(s.side, s.sweep_id): f"{100 * s.change:+.1f}% new level" for s in shifts}
    variants = _passes_variant(history)
    rows, marked = [], set()
    for r in history.to_dict("records"):
        key = (r["side"], r["sweep_id"])
        shift = starts.get(key, "") if key not in marked else ""
        marked.add(key)
        rows.append([_time(r.get("started_at")), r["sweep_id"], r["side"], str(r["sha"])[:12],
                     *([str(r["variant"])] if variants else []), r["settings"], r["status"],
                     format_number(_float(r[metric])), shift, one_line(r["error"])])
    return Table(["started (UTC)", "sweep", "side", "sha", *(["variant"] if variants else []),
                  "params/command", "status", metric, "shift", "error"], rows)


def _passes_variant(history: pd.DataFrame) -> bool:
    """Whether some run's bench command was given the sweep's variant (``{variant}``)."""
    commands = set(history["command"].dropna()) if "command" in history else set()
    return any(passes_variant(_command(text)) for text in commands)


def _command(text: str) -> list[str]:
    try:
        command = json.loads(text)
    except ValueError:
        return []
    return [str(arg) for arg in command] if isinstance(command, list) else []


def shift_lines(shifts: Sequence[Shift], metric: str) -> list[str]:
    """One line per change point, or one saying there is none."""
    if not shifts:
        return [f"change points: none (no side's per-sweep median of {metric} shifted to a new level)"]
    return [f"change point: side {s.side} at sweep {s.sweep_id} ({_time(s.started_at)}): median {metric} "
            f"{format_number(s.before)} -> {format_number(s.after)} ({change_text(s.change, s.low, s.high)})"
            for s in shifts]


def change_text(change: float, low: float, high: float) -> str:
    """``+10.2% [+8.1%, +12.0%]``: a change of a level and the 95 % interval of it (of the ratio)."""
    if math.isnan(low) or math.isnan(high):
        return f"{100 * change:+.1f}%"
    return f"{100 * change:+.1f}% [{100 * (low - 1):+.1f}%, {100 * (high - 1):+.1f}%]"


def summary_line(history: CaseHistory) -> str:
    """How many runs matched and the median of the ok ones, per params/command label."""
    runs, query = history.runs, history.query
    ok = runs[runs["status"] == "ok"]
    medians = ", ".join(f"{label} {format_number(stats.median(ok.loc[ok['settings'] == label, metric]))}"
                        for metric in [query.metric] for label in dict.fromkeys(runs["settings"]))
    sweeps = runs["sweep_id"].nunique()
    window = (f" (the latest {query.last} of {history.recorded_sweeps} sweeps of the case; --all shows every "
              "one)" if query.last is not None and history.recorded_sweeps > query.last else "")
    return (f"{len(runs)} runs of {query.describe()} ({len(ok)} ok) in {sweeps} sweeps{window}; "
            f"median {query.metric} of ok runs: {medians}")


def history_title(history: CaseHistory) -> str:
    return f"shasweep history: {history.query.describe()}"


def history_markdown(history: CaseHistory) -> str:
    metric = history.query.metric
    items = md_items([*settings_lines(history.runs), *shift_lines(history.shifts, metric)])
    return (f"# {md_text(history_title(history))}\n\n{md_text(summary_line(history))}\n\n{items}\n\n"
            + markdown_table(history_table(history.runs, metric, history.shifts)) + "\n")


def history_page(history: CaseHistory) -> Page:
    from orchestrator.render.page import Page  # imports Bokeh: only for a page
    from orchestrator.render.plots import history_plot

    query, runs = history.query, history.runs
    page = Page(history_title(history))
    page.paragraph(summary_line(history))
    page.items(settings_lines(runs))
    page.items(shift_lines(history.shifts, query.metric))
    page.figures([history_plot(runs, query.metric, f"{query.describe()}: {query.metric} per run "
                               "(dashed: change points)", [s.started_at for s in history.shifts])])
    page.table(history_table(runs, query.metric, history.shifts))
    return page


def _time(value: object) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S") if isinstance(value, pd.Timestamp) else "-"


def _float(value: object) -> float:
    return float(value) if isinstance(value, int | float) and not pd.isna(value) else float("nan")
