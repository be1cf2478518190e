"""The model of ``shasweep history --case CASE``: every recorded run of one case over time, from the
Parquet alone.

The runs of the case in every sweep, or in its latest ``last`` sweeps, are read (the results index
says which sweeps and files hold them; no sweep record needed), one summary row per run (its means;
with ``steps``, a phase's median over the run's measured steps, read from the steps table); runs are
audited with the checks that need no record (loaded SHA, measured steps, envruntime backend and
managers), oldest first, optionally only one side or the SHAs starting with a prefix. Runs measured
with different params or bench commands are not comparable: each distinct (params, command) gets a
label (``P1``, ``P2``... in order of first use). The change points of each side's per-sweep median
(``analysis.changepoints``) belong to the model. Rendering is ``render.history``'s.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd
import pyarrow as pa

from orchestrator.analysis.changepoints import Shift, sweep_shifts
from orchestrator.analysis.legacy_audit import AUDIT_INPUT_COLUMNS, apply_audit
from orchestrator.errors import InvalidInputError
from orchestrator.store import query as store_query
from orchestrator.store.query import Where

_SHA_PREFIX = re.compile(r"[0-9a-f]{4,40}\Z")


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


@dataclass(frozen=True)
class CaseHistory:
    """The runs of a history query, oldest first (one row per run, with its ``settings`` label), the
    change points of each side's per-sweep median of the metric, and how many sweeps of the case are
    recorded (shown or not)."""

    query: HistoryQuery
    runs: pd.DataFrame
    shifts: list[Shift]
    recorded_sweeps: int


def case_history_of(runs: pd.DataFrame, query: HistoryQuery, recorded_sweeps: int | None = None
                    ) -> CaseHistory:
    """The model of ``runs`` (a history's frame; ``recorded_sweeps`` default: the sweeps it holds)
    with their change points."""
    recorded = runs["sweep_id"].nunique() if recorded_sweeps is None else recorded_sweeps
    return CaseHistory(query, runs, sweep_shifts(runs, query.metric), recorded)


# What the table, the plot and the audit of a history read: one summary row per run, never its steps;
# typed as the writer (store.parquet.run_table) types them, so no file's footer is read twice.
_TYPED: dict[str, pa.DataType] = {"started_at": pa.timestamp("us", tz="UTC"), "order": pa.int64(),
                                  "audited": pa.bool_(), "steps": pa.int64(), "throughput": pa.float64(),
                                  "measure_wall_s": pa.float64()}
HISTORY_COLUMNS: tuple[str, ...] = (
    "run_key", "started_at", "sweep_id", "order", "side", "sha", "variant", "params", "command", "status",
    "error", "audited", "steps", "throughput", "measure_wall_s", *AUDIT_INPUT_COLUMNS)


def load_case_history(results_root: Path, query: HistoryQuery) -> CaseHistory:
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
    return case_history_of(with_settings(apply_audit(mine).sort_values(order).reset_index(drop=True)), query,
                           len(recorded))


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


def with_settings(history: pd.DataFrame) -> pd.DataFrame:
    """``history`` (oldest first) with each run's params/command label in ``settings``."""
    return history.assign(settings=_settings_keys(history).map(settings_labels(history)))


def settings_labels(history: pd.DataFrame) -> dict[str, str]:
    """(params | command) text -> ``P1``, ``P2``... in order of first use."""
    keys = list(dict.fromkeys(_settings_keys(history)))
    return {key: f"{SETTINGS_PREFIX}{i + 1}" for i, key in enumerate(keys)}
