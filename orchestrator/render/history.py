"""``shasweep history --case CASE``: every recorded run of one case over time, from the Parquet alone.

The runs of the case in every sweep, or in its latest ``last`` sweeps, are read (the results index
says which sweeps and files hold them; no sweep record needed), one summary row per run (its means;
with ``--steps``, a phase's median over the run's measured steps, read from the steps table); runs
are audited with the checks that need no record (loaded SHA, measured steps, envruntime backend and
managers) and shown oldest first, optionally only one side or the SHAs starting with a prefix. Runs
measured with different params or bench commands are not comparable: each distinct (params, command)
gets a label (``P1``, ``P2``... in order of first use), its own median and its own series in the
plot. The change points of each side's per-sweep median (``analysis.changepoints``) are listed,
marked in the table's ``shift`` column on the first run of the sweep that starts a new level, and
drawn on the plot."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd
import pyarrow as pa

from orchestrator.analysis import stats
from orchestrator.analysis.changepoints import Shift, sweep_shifts
from orchestrator.analysis.legacy_audit import AUDIT_INPUT_COLUMNS, apply_audit
from orchestrator.errors import InvalidInputError
from orchestrator.render.markdown import markdown_table, md_items, md_text
from orchestrator.render.tables import Table, format_number, one_line
from orchestrator.spec.commands import passes_variant
from orchestrator.store import query as store_query
from orchestrator.store.query import Where

if TYPE_CHECKING:  # Bokeh: only for a page
    from orchestrator.render.page import Page

_SHA_PREFIX = re.compile(r"[0-9a-f]{4,40}\Z")


RECORDED_SWEEPS = "sweeps_recorded"  # ``attrs`` of a loaded history: sweeps of the case, shown or not


@dataclass(frozen=True)
class HistoryQuery:
    """Which runs to show: one case, optionally one side and/or SHAs starting with ``sha``; with
    ``steps``, the metric (a phase) is each run's median over its measured steps, not its mean."""

    case: str
    side: str | None = None
    sha: str | None = None
    metric: str = "throughput"
    steps: bool = False
    last: int | None = None  # only the latest ``last`` sweeps of the case (None: every one)

    def describe(self) -> str:
        filters = [f"side {self.side}" if self.side else "", f"sha {self.sha}*" if self.sha else ""]
        return ", ".join([self.case, *filter(None, filters)])


# What the table, the plot and the audit of a history read: one summary row per run, never its steps;
# typed as the writer (store.parquet.run_table) types them, so no file's footer is read twice.
_TYPED: dict[str, pa.DataType] = {"started_at": pa.timestamp("us", tz="UTC"), "order": pa.int64(),
                                  "audited": pa.bool_(), "steps": pa.int64(), "throughput": pa.float64(),
                                  "measure_wall_s": pa.float64()}
HISTORY_COLUMNS: tuple[str, ...] = (
    "run_key", "started_at", "sweep_id", "order", "side", "sha", "variant", "params", "command", "status",
    "error", "audited", "steps", "throughput", "measure_wall_s", *AUDIT_INPUT_COLUMNS)


def load_history(results_root: Path, query: HistoryQuery) -> pd.DataFrame:
    """The matching runs, oldest first; ``InvalidInputError`` naming what matched nothing."""
    if query.sha is not None and not _SHA_PREFIX.match(query.sha):
        raise InvalidInputError(f"{query.sha!r} is not a SHA prefix (4 to 40 lowercase hex digits)", "--sha")
    where = Where(cases=[query.case], measured=True)  # a bisect's reused runs are not new samples
    recorded = _sweeps_oldest_first(results_root, where)
    shown = recorded if query.last is None else recorded[-query.last:]
    if len(shown) < len(recorded):
        where = replace(where, sweeps=shown)
    wanted = dict.fromkeys((*HISTORY_COLUMNS, *(() if query.steps else (query.metric,))))
    metrics = {query.metric: pa.float64()}  # every phase and metric is a float column
    mine = store_query.read_runs(results_root, where, pa.schema(
        [(name, _TYPED.get(name) or metrics.get(name) or pa.string()) for name in wanted]))
    if mine.empty:
        _raise_no_runs(results_root, query)
    if not query.steps and mine[query.metric].isna().all():
        _check_metric(results_root, where, query.metric)
    if query.side is not None:
        if not (mine["side"] == query.side).any():
            raise InvalidInputError(f"no runs of side {query.side!r} in case {query.case}; sides: "
                                    f"{', '.join(sorted(mine['side'].dropna().unique()))}", "--side")
        mine = mine[mine["side"] == query.side]
    if query.sha is not None:
        mine = mine[mine["sha"].str.startswith(query.sha)]
        if mine.empty:
            raise InvalidInputError(f"no runs of {query.describe()}", "--sha")
    if query.steps:
        mine = mine.assign(**{query.metric: _step_medians(results_root, query, mine)})
    order = [c for c in ("started_at", "sweep_id", "order") if c in mine]
    history = apply_audit(mine).sort_values(order).reset_index(drop=True)
    history = history.assign(settings=_settings_keys(history).map(settings_labels(history)))
    history.attrs[RECORDED_SWEEPS] = len(recorded)
    return history


def _sweeps_oldest_first(results_root: Path, where: Where) -> list[str]:
    """The sweeps holding runs ``where`` selects, by their first run's start (from the index)."""
    found = store_query.lookup(results_root, where, ["sweep_id", "started_at"])
    first = found.groupby("sweep_id")["started_at"].min().reset_index()
    return first.sort_values(["started_at", "sweep_id"], na_position="first")["sweep_id"].tolist()


def _raise_no_runs(results_root: Path, query: HistoryQuery) -> None:
    """``InvalidInputError`` naming the recorded cases (or that nothing is recorded)."""
    recorded = store_query.lookup(results_root, Where(measured=True), ["case"])
    if recorded.empty:
        raise InvalidInputError(f"no runs recorded under {Path(results_root) / 'runs'}")
    raise InvalidInputError(f"no runs of case {query.case!r}; recorded cases: "
                            f"{', '.join(sorted(recorded['case'].dropna().unique()))}", "--case")


def _check_metric(results_root: Path, where: Where, metric: str) -> None:
    """A metric no run of the case has a value of must at least be a numeric column of its files."""
    schema = store_query.runs_schema(results_root, where)
    kind = schema.field(metric).type if metric in schema.names else None
    if kind is None or not (pa.types.is_floating(kind) or pa.types.is_integer(kind)):
        numeric = sorted(f.name for f in schema if f.name == "throughput" or f.name.endswith("_ms"))
        raise InvalidInputError(f"unknown metric {metric!r}; recorded: {', '.join(numeric)}", "--metric")


def _step_medians(results_root: Path, query: HistoryQuery, runs: pd.DataFrame) -> pd.Series:
    """Each run's median of its measured steps' ``query.metric`` (a phase), aligned with ``runs``."""
    steps = store_query.read_steps(results_root, Where(sweeps=sorted(runs["sweep_id"].unique()),
                                                      run_keys=list(runs["run_key"])),
                                   phases=[query.metric], columns=["run_key", "ms"], warmup=False)
    if steps.empty:
        raise InvalidInputError(f"no measured steps of phase {query.metric!r} recorded for "
                                f"{query.describe()}", "--metric")
    return runs["run_key"].map(steps.groupby("run_key")["ms"].median())


SETTINGS_PREFIX = "P"


def _settings_keys(history: pd.DataFrame) -> pd.Series:
    """One text per run that is equal exactly when params and command are."""
    columns = [history[c].fillna("-").astype(str) if c in history else pd.Series("-", index=history.index)
               for c in ("params", "command")]
    return columns[0] + " | " + columns[1]


def settings_labels(history: pd.DataFrame) -> dict[str, str]:
    """(params | command) text -> ``P1``, ``P2``... in order of first use."""
    keys = list(dict.fromkeys(_settings_keys(history)))
    return {key: f"{SETTINGS_PREFIX}{i + 1}" for i, key in enumerate(keys)}


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
            f"{format_number(s.before)} -> {format_number(s.after)} ({100 * s.change:+.1f}%)" for s in shifts]


def summary_line(history: pd.DataFrame, query: HistoryQuery) -> str:
    """How many runs matched and the median of the ok ones, per params/command label."""
    ok = history[history["status"] == "ok"]
    medians = ", ".join(f"{label} {format_number(stats.median(ok.loc[ok['settings'] == label, metric]))}"
                        for metric in [query.metric] for label in dict.fromkeys(history["settings"]))
    sweeps = history["sweep_id"].nunique()
    recorded = history.attrs.get(RECORDED_SWEEPS, sweeps)
    window = (f" (the latest {query.last} of {recorded} sweeps of the case; --all shows every one)"
              if query.last is not None and recorded > query.last else "")
    return (f"{len(history)} runs of {query.describe()} ({len(ok)} ok) in {sweeps} sweeps{window}; "
            f"median {query.metric} of ok runs: {medians}")


def title(query: HistoryQuery) -> str:
    return f"shasweep history: {query.describe()}"


def to_markdown(history: pd.DataFrame, query: HistoryQuery) -> str:
    shifts = sweep_shifts(history, query.metric)
    items = md_items([*settings_lines(history), *shift_lines(shifts, query.metric)])
    return (f"# {md_text(title(query))}\n\n{md_text(summary_line(history, query))}\n\n{items}\n\n"
            + markdown_table(history_table(history, query.metric, shifts)) + "\n")


def html_file_name(query: HistoryQuery) -> str:
    """``history-<case>-<metric>.html`` (``/`` in the case as ``_``)."""
    return f"history-{query.case.replace('/', '_')}-{query.metric}.html"


def history_page(history: pd.DataFrame, query: HistoryQuery) -> Page:
    from orchestrator.render.page import Page  # imports Bokeh: only for a page
    from orchestrator.render.plots import history_plot

    shifts = sweep_shifts(history, query.metric)
    page = Page(title(query))
    page.paragraph(summary_line(history, query))
    page.items(settings_lines(history))
    page.items(shift_lines(shifts, query.metric))
    page.figures([history_plot(history, query.metric, f"{query.describe()}: {query.metric} per run "
                               "(dashed: change points)", [s.started_at for s in shifts])])
    page.table(history_table(history, query.metric, shifts))
    return page


def _time(value: object) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S") if isinstance(value, pd.Timestamp) else "-"


def _float(value: object) -> float:
    return float(value) if isinstance(value, int | float) and not pd.isna(value) else float("nan")
