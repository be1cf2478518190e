"""The statistics of lockstep rounds (docs/design.md, "Statistics", lockstep).

In a lockstep round every side's process is resident and the host is given to one at a time, one
block of steps each, in cycles in which every side runs once (``worker.lockstep_round.turn_order``). A
side's block and the baseline's block of the same cycle ran seconds apart: a *block pair*. The
round's estimate of a side's log ratio is the median of its block pairs' log ratios: a burst of a
neighbour that hits a few blocks moves a few pairs and not the median, where it would move the
ratio of the two processes' totals. Rounds (process pairs) stay the independent units of the
interval, because each process carries its own speed offset (memory layout, page placement) that
no pairing of its blocks can cancel. ``tests/orchestrator/test_lockstep_stats.py`` measures the
coverage and the sequential error rates on simulated hosts.

A run's blocks are stored as the JSON list ``blocks`` (one object per block the worker commanded:
``block``, ``cycle`` (null for warm-up blocks), ``steps``, ``wall_s``, ``warmup``, ``started``,
``ended``, ``throughput`` and ``phases``, the block's mean of each phase).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from orchestrator.store import query

LOCKSTEP_COLUMNS: tuple[str, ...] = ("ran_in", "lockstep_fallback", "blocks")  # text columns of its runs


def round_log_ratios(pair_log_ratios: np.ndarray) -> np.ndarray:
    """Per-round estimates from block-pair log ratios ``[..., pairs]``: their median."""
    return np.median(pair_log_ratios, axis=-1)


def parse_blocks(cell: object) -> list[dict]:
    """A run's ``blocks`` column as a list of block objects; [] for null, NaN or anything malformed."""
    if not isinstance(cell, str):
        return []
    try:
        blocks = json.loads(cell)
    except (json.JSONDecodeError, RecursionError):
        return []
    return [b for b in blocks if isinstance(b, dict)] if isinstance(blocks, list) else []


def block_values(blocks: list[dict], metric: str) -> dict[int, float]:
    """Cycle -> the metric of that cycle's measured block (``throughput`` or a phase mean); blocks
    without the metric or with a value that is not a positive finite number are left out."""
    values = {}
    for block in blocks:
        cycle = block.get("cycle")
        value = block.get("throughput") if metric == "throughput" else (block.get("phases") or {}).get(metric)
        if isinstance(cycle, int) and not block.get("warmup") and _positive(value):
            values[cycle] = float(value)
    return values


def pair_log_ratios(base_blocks: list[dict], cand_blocks: list[dict], metric: str) -> list[float]:
    """log(candidate / baseline) of the metric for every cycle both ran, in cycle order."""
    base, cand = block_values(base_blocks, metric), block_values(cand_blocks, metric)
    return [math.log(cand[c] / base[c]) for c in sorted(base.keys() & cand.keys())]


def round_log_ratio(base_blocks: list[dict], cand_blocks: list[dict], metric: str) -> float | None:
    """The round's estimate (the median of its block pairs' log ratios); None without a pair."""
    pairs = pair_log_ratios(base_blocks, cand_blocks, metric)
    return float(np.median(pairs)) if pairs else None


def _positive(value: object) -> bool:
    number = isinstance(value, int | float) and not isinstance(value, bool)
    return number and math.isfinite(value) and value > 0


@dataclass(frozen=True)
class RoundPairs:
    """One side against the baseline in one lockstep round: its block-pair ratios and the runs'."""

    case: str
    side: str
    repeat: int
    pairs: list[float]  # side / baseline of each cycle's blocks (throughput), in cycle order
    runs_ratio: float | None  # side / baseline of the two runs' throughputs


@dataclass(frozen=True)
class LockstepView:
    """What a report shows of a lockstep sweep (or of any sweep that waited for quiet)."""

    orders: dict[str, dict[str, int]]  # case -> the order its ok runs ran in -> how many
    fallbacks: dict[str, str]  # case -> why it ran interleaved (the first reason recorded)
    rounds: list[RoundPairs]
    quiet_waits: list[float]  # per run that waited, the wait (s)
    quiet_missed: int  # runs whose wait ended without a quiet second


def lockstep_view(runs: pd.DataFrame, baseline: str) -> LockstepView | None:
    """The lockstep section of a report from the sweep's runs (``ran_in``, ``lockstep_fallback``,
    ``blocks``, ``quiet_*`` columns); None when no run ran in a lockstep sweep or waited for quiet."""
    column = runs["ran_in"] if "ran_in" in runs else pd.Series(dtype=object)
    waits = pd.to_numeric(runs.get("quiet_wait_s", pd.Series(dtype=float)), errors="coerce").dropna()
    if not column.notna().any() and waits.empty:
        return None
    ok = runs[(runs["status"] == "ok") & column.notna()] if "status" in runs else runs.iloc[:0]
    orders = {str(case): mine["ran_in"].value_counts().to_dict() for case, mine in ok.groupby("case")}
    fallbacks = {}
    if "lockstep_fallback" in runs:
        for case, reason in runs[["case", "lockstep_fallback"]].dropna().itertuples(index=False):
            fallbacks.setdefault(str(case), str(reason))
    missed = runs["quiet_met"].map(lambda v: v is False or v == 0).sum() if "quiet_met" in runs else 0
    return LockstepView(orders=orders, fallbacks=fallbacks, rounds=_round_pairs(ok, baseline),
                        quiet_waits=[float(w) for w in waits], quiet_missed=int(missed))


def _round_pairs(ok: pd.DataFrame, baseline: str) -> list[RoundPairs]:
    found = []
    lockstep_runs = ok[ok["ran_in"] == "lockstep"]
    for (case, repeat), mine in lockstep_runs.groupby(["case", "repeat"], sort=True):
        base = mine[mine["side"] == baseline]
        if len(base) != 1:
            continue
        base_row = base.iloc[0]
        base_blocks = parse_blocks(base_row.get("blocks"))
        for row in mine[mine["side"] != baseline].itertuples(index=False):
            logs = pair_log_ratios(base_blocks, parse_blocks(row.blocks), "throughput")
            both = _positive(base_row["throughput"]) and _positive(row.throughput)
            runs_ratio = row.throughput / base_row["throughput"] if both else None
            found.append(RoundPairs(str(case), str(row.side), int(repeat), [math.exp(v) for v in logs],
                                    runs_ratio))
    return found


def earlier_peak_rss(results_root: Path, shas: list[str], cases: list[str]) -> dict[str, float]:
    """SHA -> the highest peak RSS (MiB) of its earlier ok, measured runs of these cases, where any."""
    where = query.Where(shas=shas, cases=cases, status="ok", measured=True)
    runs = query.read_runs(results_root, where, pa.schema([("sha", pa.string()),
                                                          ("bench_max_rss_mib", pa.float64())]))
    if runs.empty:
        return {}
    peaks = runs.dropna(subset=["bench_max_rss_mib"]).groupby("sha")["bench_max_rss_mib"].max()
    return {str(sha): float(mib) for sha, mib in peaks.items()}


def residency_line(sides: dict[str, str], peaks: dict[str, float]) -> str:
    """What ``shasweep plan`` says of a lockstep sweep: every side's process is resident at once, with
    each side's memory from earlier runs' peak RSS where known (``sides``: side -> SHA)."""
    parts = [f"{side} {peaks[sha]:,.0f} MiB" if sha in peaks else f"{side} unknown (no earlier run)"
             for side, sha in sides.items()]
    known = [peaks[sha] for sha in sides.values() if sha in peaks]
    total = f"; at least {sum(known):,.0f} MiB at once" if known else ""
    return (f"lockstep: each round holds all {len(sides)} sides' bench processes in memory at once "
            f"(peak RSS of earlier runs: {', '.join(parts)}{total})")


def no_control_problem(runs: pd.DataFrame) -> str | None:
    """Why a lockstep sweep's input was wrong, from its runs: a round met a SHA whose bench has no
    control channel (the runs' ``bad_input``); None when none did."""
    bad = runs["bad_input"].dropna() if "bad_input" in runs else pd.Series(dtype=object)
    return str(bad.iloc[0]) if len(bad) else None
