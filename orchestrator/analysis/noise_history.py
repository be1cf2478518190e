"""Run noise of earlier sweeps, so ``shasweep plan`` can say how many rounds a gate will need.

Per case and metric: the pooled standard deviation of log values within each earlier (sweep, side)
cell of ok runs on one host, i.e. the run CV the verdicts' intervals will see, from the case's latest
``NOISE_SWEEPS`` sweeps on that host (the results index says which; the host's noise today, and a
plan that costs the same on a root of a thousand sweeps as on one of ten). A suite's cases are the
benchmarks its earlier runs found: its ``cases`` and a gate's ``case`` are names and globs, matched
against the cases of earlier runs read from a suite of the same protocol. ``plan_power`` turns it
into the MDE and the rounds an unchanged side needs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from orchestrator.capabilities import case_matches
from orchestrator.store import query
from orchestrator.store.reuse import REUSED_COLUMN

NOISE_SWEEPS = 20  # a case's latest sweeps on the host that its noise is estimated from


@dataclass(frozen=True)
class Noise:
    """The run CV of one case and metric on one host, from ``sweeps`` earlier sweeps."""

    cv: float
    sweeps: int
    runs: int


def earlier_noise(results_root: Path, cases: list[str], metric: str, hostname: str, *,
                  suite_protocol: str | None = None) -> dict[str, Noise]:
    """Per case with at least one earlier cell of 2+ ok runs on ``hostname`` among its latest
    ``NOISE_SWEEPS`` sweeps there: its ``Noise``. With ``suite_protocol``, ``cases`` are a suite's
    names and globs (``capabilities.DISCOVER``: every benchmark), and the cases are those they match
    among the runs read from a suite of that protocol (``suite_run_key`` set)."""
    where = query.Where(cases=None if suite_protocol else cases, hostnames=[hostname], status="ok",
                        measured=True)
    found = query.lookup(results_root, where)
    if suite_protocol is not None and not found.empty:
        found = found[found["case"].map(lambda case: any(case_matches(case, p) for p in cases))]
    if found.empty:
        return {}
    latest = found.groupby(["case", "sweep_id"])["created"].first().fillna("").reset_index()
    latest = latest.sort_values(["created", "sweep_id"]).groupby("case").tail(NOISE_SWEEPS)
    schema = pa.schema([(name, pa.string()) for name in (
        "sweep_id", "case", "side", "status", "host_hostname", REUSED_COLUMN, "suite_run_key", "protocol")]
        + [(metric, pa.float64())])
    wanted = replace(where, sweeps=sorted(set(latest["sweep_id"])), cases=sorted(set(latest["case"])))
    runs = query.read_runs(results_root, wanted, schema)
    if suite_protocol is not None:
        runs = runs[runs["suite_run_key"].notna() & (runs["protocol"] == suite_protocol)]
    runs = runs[runs[metric] > 0]
    return {str(case): noise for case, mine in runs.groupby("case")
            if (noise := _pooled_noise(mine, metric)) is not None}


def _pooled_noise(runs: pd.DataFrame, metric: str) -> Noise | None:
    """The pooled run CV of ``runs`` (one case) over its (sweep, side) cells of 2+ runs; None without one."""
    cells = runs.assign(log=np.log(runs[metric].to_numpy())).groupby(["sweep_id", "side"])["log"]
    sizes, variances = cells.size(), cells.var(ddof=1)
    usable = sizes >= 2
    if not usable.any():
        return None
    df = float((sizes[usable] - 1).sum())
    pooled = float(((sizes[usable] - 1) * variances[usable]).sum() / df)
    return Noise(cv=math.sqrt(math.expm1(pooled)), sweeps=int(runs["sweep_id"].nunique()),
                 runs=int(usable.sum()))

