"""The results site's model: every case x metric of a results root across its sweeps.

Built from what ``site_runs`` keeps of each sweep (its measured runs, one slim row each, and its gates'
decided intervals) and what ``site_sweeps`` knows of the sweeps and bisects. Per case:

- the commit order: the case's SHAs in the order they were first measured (the site knows no git
  history; a commit measured again later keeps its place);
- per metric (those the case's gates read; without a gate the throughput, else a suite's
  ``time_ms``): one point per sweep, side, host and params/command label (the median of its ok runs,
  their range and count), the gates' decided intervals of the case (one band per sweep, gate and
  side: the figure its report and ``verdicts.json`` give, never one of the site's own), the change
  points of each side's per-sweep median over the case's latest ``changepoints.MAX_SWEEPS`` sweeps (the
  window and the figures of ``shasweep history``), and the latest sweeps' medians for a sparkline.

A case x metric is an *open regression* when its latest change point moved to a worse level and no
waiver of that sweep names the case, or when its latest sweep has a gate FAIL no waiver accepted.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import pandas as pd

from orchestrator.analysis.changepoints import MAX_SWEEPS, Shift, sweep_shifts
from orchestrator.analysis.history_model import settings_labels, with_settings
from orchestrator.analysis.site_runs import NO_GATE
from orchestrator.analysis.site_sweeps import BisectInfo, SweepInfo
from orchestrator.analysis.verdicts import Verdict
from orchestrator.capabilities import TIME_METRIC, higher_is_better

RECENT_SWEEPS = 40  # the sweeps a sparkline shows, per side
# a case no gate reads: the first with values; a suite's time per call before the throughput its runs
# also carry (only suites write it), as a suite's gates read it
DEFAULT_METRICS: tuple[str, ...] = (TIME_METRIC, "throughput")
POINT_COLUMNS: tuple[str, ...] = ("sweep_id", "side", "host", "settings", "value", "low", "high", "n",
                                  "not_ok", "started_at", "sha", "commit")


@dataclass(frozen=True)
class ShiftSummary:
    """A change point (``changepoints.Shift``) with where it happened: the side's sweep before it and
    both SHAs (the commit range it lies in), whether the new level is better, whether a waiver of its
    sweep names the case, and the commit order position of its SHA. Kept between builds as JSON."""

    side: str
    sweep_id: str
    started: str | None  # ISO 8601, the first run of its sweep
    before: float
    after: float
    low: float  # the 95 % interval of after / before
    high: float
    previous_sweep: str | None
    sha_before: str | None
    sha_after: str | None
    better: bool
    waived: bool
    commit: int

    @property
    def change(self) -> float:
        return self.after / self.before - 1.0 if self.before else math.nan

    def to_json(self) -> dict[str, Any]:
        return {key: (None if isinstance(value, float) and math.isnan(value) else value)
                for key, value in asdict(self).items()}

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> ShiftSummary:
        return cls(**{key: (math.nan if raw[key] is None and key in _FLOATS else raw[key])
                      for key in cls.__dataclass_fields__})


_FLOATS = ("before", "after", "low", "high")


@dataclass(frozen=True)
class MetricHistory:
    """One case x metric: ``points`` (``POINT_COLUMNS``), ``bands`` (the case's gate rows on the
    metric with ``commit``, ``started_at``, ``host`` and ``settings`` of the gated side), change points,
    each side's recent per-sweep medians (oldest first), and the open-regression verdict."""

    case: str
    metric: str
    points: pd.DataFrame
    bands: pd.DataFrame
    shifts: list[ShiftSummary]
    recent: dict[str, list[float]]
    latest_sweep: str | None
    latest_gates: pd.DataFrame  # the gate rows of the latest sweep of the case on this metric
    open_regression: bool
    runs: int
    sweeps: int

    def index_row(self, sides: list[str]) -> IndexRow:
        """What the index shows of it (``sides``: the case's, for the sparkline's colors)."""
        gates = [{"side": str(r["side"]), "verdict": str(r["verdict"]), "waived": bool(r["waived"]),
                  **{key: _number(r[key]) for key in ("ratio", "low", "high")}}
                 for r in self.latest_gates.to_dict("records")]
        recent = {side: [float(v) for v in values] for side, values in self.recent.items()}
        return IndexRow(self.case, self.metric, sides, recent, self.shifts[-1] if self.shifts else None,
                        self.latest_sweep, gates, self.open_regression)



def _number(value: object) -> float | None:
    return None if value is None or pd.isna(value) else float(value)


@dataclass(frozen=True)
class IndexRow:
    """One row of the index: a case x metric's sparkline (each side's recent per-sweep medians), its
    latest change point, its latest sweep's gate rows (side, verdict, waived, ratio, low, high) and
    whether it is an open regression. Kept between builds as JSON, so a build renders the index
    without the views of the cases nothing touched."""

    case: str
    metric: str
    sides: list[str]
    recent: dict[str, list[float]]
    shift: ShiftSummary | None
    latest_sweep: str | None
    latest_gates: list[dict[str, Any]]
    open_regression: bool

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "shift": None if self.shift is None else self.shift.to_json()}

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> IndexRow:
        fields = {key: raw[key] for key in cls.__dataclass_fields__}
        shift = raw["shift"]
        return cls(**{**fields, "shift": None if shift is None else ShiftSummary.from_json(shift)})


@dataclass(frozen=True)
class CaseView:
    """One case: its metrics' histories, params/command labels, commit order, sweeps (oldest first),
    the bisects of it and the sweeps where one side alone had it."""

    case: str
    metrics: list[MetricHistory]
    settings: dict[str, str]  # label -> "params ...; command ..."
    commits: list[str]
    sweeps: list[str]
    sides: list[str]  # in the order first measured
    bisects: list[BisectInfo] = field(default_factory=list)
    one_sided: list[tuple[str, str, str]] = field(default_factory=list)  # (sweep, side, added | removed)


def shown_metrics(runs: pd.DataFrame, gates: pd.DataFrame) -> list[str]:
    """The metrics a case's page shows: those its gates read, else the first default one it has."""
    gated = list(dict.fromkeys(gates["metric"])) if len(gates) else []
    if gated:
        return gated
    return [m for m in DEFAULT_METRICS if m in runs and runs[m].notna().any()][:1]


def case_view(case: str, runs: pd.DataFrame, gates: pd.DataFrame, sweeps: Mapping[str, SweepInfo],
              bisects: list[BisectInfo] = ()) -> CaseView:
    """The view of ``case`` from its measured runs (``site_runs.series_rows``) and its gate rows."""
    runs = with_settings(runs.sort_values(["started_at", "sweep_id", "order"], na_position="first")
                         .reset_index(drop=True))
    commits = list(dict.fromkeys(runs["sha"].fillna("-")))
    position = {sha: i for i, sha in enumerate(commits)}
    runs = runs.assign(commit=runs["sha"].fillna("-").map(position))
    order = list(dict.fromkeys(runs["sweep_id"]))
    gated, one_sided = gates[gates["gate"] != NO_GATE], gates[gates["gate"] == NO_GATE]
    latest_one_sided = one_sided[one_sided["sweep_id"] == (order[-1] if order else None)]
    metrics = [_metric_history(case, metric, runs, gated[gated["metric"] == metric], sweeps, order,
                               latest_one_sided) for metric in shown_metrics(runs, gated)]
    labels = {label: key for key, label in settings_labels(runs).items()}
    settings = {label: "params {}; command {}".format(*key.split(" | ", 1)) for label, key in labels.items()}
    return CaseView(case, metrics, settings, commits, order, list(dict.fromkeys(runs["side"].astype(str))),
                    [b for b in bisects if b.case == case],
                    list(zip(one_sided["sweep_id"], one_sided["side"], one_sided["verdict"], strict=True)))


def _metric_history(case: str, metric: str, runs: pd.DataFrame, gates: pd.DataFrame,
                    sweeps: Mapping[str, SweepInfo], order: list[str], one_sided: pd.DataFrame
                    ) -> MetricHistory:
    """``metric`` of ``case`` (``gates``: its gate rows on it; ``one_sided``: the latest sweep's rows
    saying one side alone had the case, listed with that sweep's gates, never gated)."""
    ok = runs[(runs["status"] == "ok") & runs[metric].notna()]
    window = set(order[-MAX_SWEEPS:])
    shifts = sweep_shifts(runs[runs["sweep_id"].isin(window)], metric)
    per_sweep = _per_sweep(ok, metric)
    views = [_summary(case, s, per_sweep, sweeps, metric) for s in shifts]
    recent = {str(side): mine["value"].tail(RECENT_SWEEPS).tolist()
              for side, mine in per_sweep.groupby("side", sort=False)}
    latest = order[-1] if order else None
    latest_gates = gates[gates["sweep_id"] == latest]
    failed = ((latest_gates["verdict"] == Verdict.FAIL.value) & ~latest_gates["waived"].astype(bool)).any()
    if len(one_sided):
        latest_gates = pd.concat([g for g in (latest_gates, one_sided) if len(g)], ignore_index=True)
    last = views[-1] if views else None
    regressed = last is not None and not last.better and not last.waived
    return MetricHistory(case, metric, _points(runs, ok, metric), _bands(gates, runs), views, recent, latest,
                         latest_gates, bool(regressed or failed), int(ok.shape[0]),
                         int(runs["sweep_id"].nunique()))


def _per_sweep(ok: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Each side's median of its ok runs per sweep (the series a change point splits), sweeps by
    their first run, with the side's SHA there."""
    grouped = ok.groupby(["side", "sweep_id"], sort=False).agg(
        started_at=("started_at", "min"), value=(metric, "median"), sha=("sha", "first"),
        commit=("commit", "first"))
    return grouped.reset_index().sort_values(["started_at", "sweep_id"], na_position="first")


def _summary(case: str, shift: Shift, per_sweep: pd.DataFrame, sweeps: Mapping[str, SweepInfo],
             metric: str) -> ShiftSummary:
    mine = per_sweep[per_sweep["side"] == shift.side].reset_index(drop=True)
    at = [int(i) for i in mine.index[mine["sweep_id"] == shift.sweep_id]]
    before = mine.iloc[at[0] - 1] if at and at[0] > 0 else None
    after = mine.iloc[at[0]] if at else None
    info = sweeps.get(shift.sweep_id)
    started = shift.started_at.isoformat() if isinstance(shift.started_at, pd.Timestamp) else None
    levels = (float(v) for v in (shift.before, shift.after, shift.low, shift.high))
    return ShiftSummary(shift.side, shift.sweep_id, started, *levels,
                        _text(before, "sweep_id"), _text(before, "sha"), _text(after, "sha"),
                        better=bool((shift.after > shift.before) == higher_is_better(metric)),
                        waived=info is not None and info.waives_case(case),
                        commit=-1 if after is None else int(after["commit"]))


def _text(row: pd.Series | None, column: str) -> str | None:
    value = None if row is None else row[column]
    return value if isinstance(value, str) else None


def _points(runs: pd.DataFrame, ok: pd.DataFrame, metric: str) -> pd.DataFrame:
    """One point per sweep, side, host and params/command label: the median of its ok runs' metric,
    their min, max and count, and how many runs there were not ok."""
    keys = ["sweep_id", "side", "host", "settings"]
    if ok.empty:
        return pd.DataFrame(columns=list(POINT_COLUMNS))
    points = ok.groupby(keys, sort=False).agg(
        value=(metric, "median"), low=(metric, "min"), high=(metric, "max"), n=(metric, "size"),
        started_at=("started_at", "min"), sha=("sha", "first"), commit=("commit", "first")).reset_index()
    failed = runs[runs["status"] != "ok"].groupby(keys, sort=False).size().rename("not_ok").reset_index()
    points = points.merge(failed, on=keys, how="left").fillna({"not_ok": 0})
    return points[list(POINT_COLUMNS)].sort_values(["commit", "started_at"]).reset_index(drop=True)


def _bands(gates: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """The gate rows with where the gated side ran: its commit position, first start, host and label."""
    where = runs.groupby(["sweep_id", "side"], sort=False).agg(
        commit=("commit", "first"), started_at=("started_at", "min"), host=("host", "first"),
        settings=("settings", "first"), sha=("sha", "first")).reset_index()
    bands = gates.merge(where, on=["sweep_id", "side"], how="left")
    return bands.sort_values(["commit", "started_at"], na_position="first").reset_index(drop=True)


@dataclass(frozen=True)
class SiteIndex:
    """The index: every case x metric (open regressions first, then those whose latest change point
    is most recent, then by name), the sweeps newest first, the runs counted, what was damaged and the
    bisects."""

    rows: list[IndexRow]
    sweeps: list[str]
    runs: int
    damaged: list[str]
    bisects: list[BisectInfo]


def site_index(rows: list[IndexRow], sweeps: list[str], runs: int, damaged: list[str],
               bisects: list[BisectInfo]) -> SiteIndex:
    """The index of ``rows``; ``sweeps``: every sweep id, newest first."""
    return SiteIndex(sorted(rows, key=_index_order), sweeps, runs, damaged, bisects)


def _index_order(row: IndexRow) -> tuple:
    when = row.shift.started if row.shift is not None else None
    stamp = -pd.Timestamp(when).value if when else 0
    return (not row.open_regression, row.shift is None, stamp, row.case, row.metric)
