"""Drift: has a side's median moved against earlier sweeps of the same code on the same host?

A side of the current sweep is compared with the ok (audited) runs of *earlier* sweeps (first run
started before this sweep's first run) that share its identity: SHA, case, variant, params, env, the
bench command's argv template and host (hostname and CPU model). The side labels may differ between
sweeps; runs with an unknown identity field are never matched, except the command, which rows
written before it was recorded lack: those match only each other. Only the partitions of the latest
``HISTORY_SWEEPS`` recorded sweeps (by creation, none newer than this one) that ran one of this
sweep's SHAs are read (the results index says which), so a report stays fast on a large root.

The reference is the median of the earlier sweeps' per-sweep medians (robust to one odd sweep); the
latest earlier sweep's median is shown next to it. The software is not part of the match: the
package versions the bench and the host reported (``analysis.software``) are compared with those of
the matched earlier runs, and a drift names every package that changed (``mujoco-uni-runtime
0.3.1 -> 0.4.0``), so a software change is not taken for the machine drifting.

A side drifted when the change lies outside the noise of both the sweep and its history: the 95 %
interval of the change (``stats.change_interval``, the interval ``compare`` gives two sweeps: this
sweep's runs against the earlier sweeps' runs, on the log scale, widened by the sweep-to-sweep
offsets the earlier sweeps show beyond their run noise) lies entirely above or below no change, and
the change is at least ``threshold`` (the sweep's ``drift_threshold``: a smaller move is not worth a
flag, however clear). A noisy figure (a 30 ms CPU time) must move far to drift; a steady one little.
Seeded simulations (tests/orchestrator/test_drift_rule.py) measure the false-alarm rate on flat
histories and the power on a real shift. Drift is reported, never a verdict: it does not change the
exit code. The earlier sweeps' medians and the current one, oldest first, are also
split at their change points (``changepoints``): when the current median sits in a segment that
began after the first, ``new_segment_since`` names the sweep that began it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pyarrow as pa

from orchestrator.analysis import stats
from orchestrator.analysis.changepoints import segments
from orchestrator.analysis.legacy_audit import AUDIT_INPUT_COLUMNS, apply_audit
from orchestrator.analysis.software import (
    SOFTWARE_COLUMNS,
    describe_changes,
    reported_versions,
    version_changes,
)
from orchestrator.spec.record import SweepRecord
from orchestrator.store import query
from orchestrator.store.reuse import REUSED_COLUMN

IDENTITY_COLUMNS: tuple[str, ...] = ("sha", "case", "variant", "params", "env", "command", "host_hostname",
                                     "host_cpu_model")
UNRECORDED_COMMAND = ""  # the command of rows written before it was a column
HISTORY_SWEEPS = 10  # the most recent earlier sweeps a side is compared with
_STRING_COLUMNS: tuple[str, ...] = tuple(dict.fromkeys(
    ("sweep_id", "side", "status", "error", *IDENTITY_COLUMNS, *AUDIT_INPUT_COLUMNS, *SOFTWARE_COLUMNS)))


@dataclass(frozen=True)
class Drift:
    """One metric of one (case, side): this sweep's median against its history."""

    case: str
    side: str
    metric: str
    current: float  # this sweep's median
    reference: float  # median of the earlier sweeps' medians
    sweeps: int  # how many earlier sweeps matched
    latest_sweep: str  # the most recent of them
    latest: float  # its median
    threshold: float  # the smallest change flagged (``drift_threshold``)
    software: tuple[str, ...] = ()  # packages whose versions differ from the matched earlier runs'
    new_segment_since: str | None = None  # the sweep that began the current median's (later) segment
    interval: stats.Comparison | None = None  # this sweep's runs against the earlier sweeps' runs

    @property
    def change(self) -> float:
        """``current / reference - 1``; NaN when the reference is 0."""
        return self.current / self.reference - 1.0 if self.reference else math.nan

    @property
    def outside_noise(self) -> bool:
        """Whether the interval of the change lies entirely above or below no change."""
        c = self.interval
        return c is not None and c.has_interval and (c.low > 1 or c.high < 1)

    @property
    def flagged(self) -> bool:
        return self.outside_noise and abs(self.change) >= self.threshold  # NaN compares False


def load_earlier_runs(results_root: Path, record: SweepRecord, metrics: list[str]) -> pd.DataFrame:
    """The audited ok runs of the latest ``HISTORY_SWEEPS`` other recorded sweeps that ran a SHA of
    ``record``'s sweep and were created no later: identity, start time and ``metrics``."""
    schema = pa.schema([(name, pa.string()) for name in _STRING_COLUMNS]
                       + [("started_at", pa.timestamp("us", tz="UTC")), ("steps", pa.int64()),
                          ("audited", pa.bool_()), (REUSED_COLUMN, pa.string())]
                       + [(name, pa.float64()) for name in metrics])
    shas = sorted({side.sha for side in record.sides.values()} - {None})
    earlier = earlier_sweeps(results_root, shas, record.sweep_id, record.created)
    if not earlier:
        return schema.empty_table().to_pandas()
    where = query.Where(sweeps=earlier[-HISTORY_SWEEPS:], shas=shas, status="ok", measured=True)
    runs = apply_audit(query.read_runs(results_root, where, schema))
    return runs[runs["status"] == "ok"]


def earlier_sweeps(results_root: Path, shas: list[str], sweep_id: str, created: str) -> list[str]:
    """The recorded sweeps other than ``sweep_id`` with runs of one of ``shas``, created no later
    than ``created``, oldest first (an index lookup: no data file is opened)."""
    found = query.lookup(results_root, query.Where(shas=shas))
    found = found[(found["sweep_id"] != sweep_id) & found["created"].notna()]  # recorded sweeps only
    found = found[found["created"] <= created]
    firsts = found.groupby("sweep_id")["created"].first()
    return [sweep for _, sweep in sorted(zip(firsts, firsts.index, strict=True))]


def find_drift(current: pd.DataFrame, history: pd.DataFrame, metrics: list[str],
               threshold: float) -> list[Drift]:
    """Drift of every (case, side, metric) of ``current`` (one sweep's ok runs) that has history.

    Both frames need ``sweep_id``, ``side``, ``started_at``, the identity columns and ``metrics``.
    """
    keys = list(IDENTITY_COLUMNS)
    current = _with_command(current).dropna(subset=keys)
    start = current["started_at"].min()
    if current.empty or pd.isna(start):
        return []
    history = _with_command(history).dropna(subset=[*keys, "started_at"])
    first_run = history.groupby("sweep_id")["started_at"].min()
    earlier = history[history["sweep_id"].isin(first_run[first_run < start].index)]
    drifts = []
    histories = earlier.groupby(keys, sort=False).indices if len(earlier) else {}  # one pass, no masks
    for (side, *identity), rows in current.groupby(["side", *keys], sort=False).indices.items():
        if tuple(identity) not in histories:  # most cells of a suite's first sweep on a host
            continue
        mine, past = current.iloc[rows], earlier.iloc[histories[tuple(identity)]]
        software = tuple(describe_changes(version_changes(reported_versions(past), reported_versions(mine))))
        for metric in metrics:
            drift = _metric_drift(mine, past, metric, first_run, threshold)
            if drift is not None:
                drifts.append(Drift(case=mine["case"].iloc[0], side=side, metric=metric, software=software,
                                    **drift))
    return drifts


def _with_command(runs: pd.DataFrame) -> pd.DataFrame:
    """``runs`` with a missing command (older rows) as ``UNRECORDED_COMMAND`` and no variant (a
    command that does not pass one) as ``""``: both are part of the identity, never unknown."""
    missing = pd.Series(None, index=runs.index, dtype=object)
    command, variant = (runs[name] if name in runs else missing for name in ("command", "variant"))
    return runs.assign(command=command.fillna(UNRECORDED_COMMAND), variant=variant.fillna(""))


def _metric_drift(mine: pd.DataFrame, past: pd.DataFrame, metric: str, first_run: pd.Series,
                  threshold: float) -> dict | None:
    """The Drift fields of one metric, or None when either side of the comparison has no value."""
    values = pd.to_numeric(mine[metric], errors="coerce")
    earlier = pd.to_numeric(past[metric], errors="coerce")
    now, per_sweep = values.median(), earlier.groupby(past["sweep_id"]).median().dropna()
    if per_sweep.empty or pd.isna(now):
        return None
    by_sweep = [group.to_numpy() for _, group in earlier.groupby(past["sweep_id"])]
    interval = stats.change_interval(values.to_numpy(), earlier.to_numpy(), by_sweep)
    latest = first_run[per_sweep.index].idxmax()
    ordered = per_sweep.reindex(first_run[per_sweep.index].sort_values().index)
    last = segments([*ordered.to_numpy(), float(now)])[-1]  # >= 2 values: it starts at an earlier sweep
    since = str(ordered.index[last.start]) if last.start > 0 else None
    return {"current": float(now), "reference": float(per_sweep.median()), "sweeps": len(per_sweep),
            "latest_sweep": str(latest), "latest": float(per_sweep[latest]), "threshold": threshold,
            "new_segment_since": since, "interval": interval}
