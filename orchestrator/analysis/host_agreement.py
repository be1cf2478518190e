"""Statistics by bench host: pairing blocks that never span two hosts, medians per host, sick hosts.

A fleet runs each round whole on one host (``dispatch.fleet``), so the per-round ratio of a
candidate to the baseline compares runs of one machine. ``pairing_blocks`` keeps it that way for
any results (a resumed round, a worker cut off but still writing): rows of a round that mixes
hosts get a block of their own per host, so a paired comparison never pairs across hosts (it falls
back to unpaired when the sides' blocks no longer match).

``host_checks`` asks, per (case, side, metric), whether the hosts' per-round ratios differ: a
Kruskal-Wallis test over the hosts (each with at least ``MIN_ROUNDS`` rounds), Bonferroni-corrected
over every comparison of the sweep at family-wise level ``FAMILY_ALPHA``. When they do, the host
whose median ratio lies farthest from the median of the hosts' medians is flagged (with two hosts,
both are), if its ratio differs from the other hosts' by more than ``MIN_EFFECT``: its machine
measures this comparison differently (a sick host).
The false-alarm rate and the power are checked by seeded simulations in the tests.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from orchestrator.analysis import rank_tests

HOST_COLUMN = "host_id"
FAMILY_ALPHA = 0.05  # chance that a sweep whose hosts all agree flags any host
MIN_EFFECT = 0.01  # a host's ratio of medians must differ from the others' by more than 1%
MIN_ROUNDS = 3  # per-round ratios a host (and the rest) need to be tested


@dataclass(frozen=True)
class HostCheck:
    """One host's per-round ratios of (case, side, metric) against those of the other hosts."""

    host: str
    case: str
    side: str
    metric: str
    rounds: int
    ratio: float  # median of this host's per-round ratios
    others_ratio: float  # the median of the other hosts' median ratios
    p_value: float  # Kruskal-Wallis over the hosts of this comparison
    threshold: float  # the Bonferroni-corrected level it was judged at
    flagged: bool


def hosts_of(runs: pd.DataFrame) -> list[str]:
    """The host ids the runs ran on (sorted; empty when the column is absent or null)."""
    if HOST_COLUMN not in runs:
        return []
    return sorted(str(h) for h in runs[HOST_COLUMN].dropna().unique())


def mixed_rounds(runs: pd.DataFrame) -> list[int]:
    """Repeats whose rows ran on more than one host."""
    if HOST_COLUMN not in runs or runs.empty:
        return []
    per_round = runs.dropna(subset=[HOST_COLUMN]).groupby("repeat")[HOST_COLUMN].nunique()
    return sorted(int(r) for r in per_round[per_round > 1].index)


def pairing_blocks(runs: pd.DataFrame) -> pd.DataFrame:
    """``runs`` with ``repeat`` renumbered so a round that mixes hosts becomes one block per host
    (numbered after the last repeat); rounds on one host keep their repeat."""
    mixed = mixed_rounds(runs)
    if not mixed:
        return runs
    out = runs.copy()
    next_block = int(out["repeat"].max()) + 1
    for repeat in mixed:
        for host in sorted(out.loc[out["repeat"] == repeat, HOST_COLUMN].dropna().unique()):
            out.loc[(out["repeat"] == repeat) & (out[HOST_COLUMN] == host), "repeat"] = next_block
            next_block += 1
    return out


def round_ratios(runs: pd.DataFrame, case: str, side: str, baseline: str, metric: str) -> pd.DataFrame:
    """Per round on one host: ``host_id``, ``repeat``, ``ratio`` of side to baseline (finite only)."""
    if HOST_COLUMN not in runs or metric not in runs:
        return pd.DataFrame(columns=[HOST_COLUMN, "repeat", "ratio"])
    mine = runs[(runs["case"] == case) & runs["side"].isin([side, baseline])].dropna(subset=[HOST_COLUMN])
    values = mine.assign(value=pd.to_numeric(mine[metric], errors="coerce"))
    table = values.pivot_table(index=[HOST_COLUMN, "repeat"], columns="side", values="value",
                               aggfunc="median")
    if side not in table or baseline not in table:
        return pd.DataFrame(columns=[HOST_COLUMN, "repeat", "ratio"])
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = table[side] / table[baseline]
    ratio = ratio[np.isfinite(ratio) & (ratio > 0)]
    return ratio.rename("ratio").reset_index()


def host_checks(runs: pd.DataFrame, cases: list[str], sides: list[str], baseline: str,
                metrics: list[str]) -> list[HostCheck]:
    """Every testable (host, case, side, metric) of ``runs`` (ok runs), judged as the module says;
    empty when the runs ran on fewer than two hosts."""
    if len(hosts_of(runs)) < 2:
        return []
    comparisons = []  # (case, side, metric, {host: per-round ratios})
    for case in cases:
        for side in (s for s in sides if s != baseline):
            for metric in metrics:
                ratios = round_ratios(runs, case, side, baseline, metric)
                by_host = {str(host): group["ratio"].to_numpy(dtype=float)
                           for host, group in ratios.groupby(HOST_COLUMN)}
                by_host = {host: values for host, values in by_host.items() if values.size >= MIN_ROUNDS}
                if len(by_host) >= 2:
                    comparisons.append((case, side, metric, by_host))
    threshold = FAMILY_ALPHA / max(len(comparisons), 1)
    checks = []
    for case, side, metric, by_host in comparisons:
        logs = {host: np.log(values) for host, values in by_host.items()}
        p = rank_tests.kruskal_p(list(logs.values())) if _varies(logs) else 1.0
        medians = {host: float(np.median(values)) for host, values in logs.items()}
        center = float(np.median(list(medians.values())))
        farthest = max(medians, key=lambda host: abs(medians[host] - center))
        for host, values in by_host.items():
            others = float(np.exp(np.median([m for h, m in medians.items() if h != host])))
            ratio = float(np.median(values))
            deviant = len(by_host) == 2 or host == farthest
            flagged = p < threshold and deviant and abs(ratio / others - 1.0) > MIN_EFFECT
            checks.append(HostCheck(host, case, side, metric, int(values.size), ratio, others, p, threshold,
                                    flagged))
    return checks


def _varies(samples: dict[str, np.ndarray]) -> bool:
    """Whether the pooled values are not all equal (the test is undefined otherwise)."""
    pooled = np.concatenate(list(samples.values()))
    return bool(pooled.size and np.ptp(pooled) > 0)


def host_medians(runs: pd.DataFrame, cases: list[str], sides: list[str], metric: str) -> pd.DataFrame:
    """Median of ``metric`` per (case, side) and host: rows (case, side), one column per host."""
    if HOST_COLUMN not in runs or metric not in runs:
        return pd.DataFrame()
    values = runs.assign(value=pd.to_numeric(runs[metric], errors="coerce")).dropna(subset=[HOST_COLUMN])
    table = values.pivot_table(index=["case", "side"], columns=HOST_COLUMN, values="value", aggfunc="median")
    present = set(table.index)
    order = [(c, s) for c in cases for s in sides if (c, s) in present]
    return table.reindex(pd.MultiIndex.from_tuples(order, names=table.index.names) if order else order)


@dataclass(frozen=True)
class HostsView:
    """What the report shows by host: the hosts, rounds that mix hosts, medians per host, the checks."""

    hosts: list[str]
    mixed_rounds: list[int]
    medians: dict[str, pd.DataFrame]  # metric -> host_medians table
    checks: list[HostCheck]

    @property
    def flagged(self) -> list[HostCheck]:
        return [check for check in self.checks if check.flagged]


def hosts_view(runs: pd.DataFrame, cases: list[str], sides: list[str], baseline: str,
               metrics: list[str]) -> HostsView:
    """The by-host part of a report over the ok ``runs``."""
    return HostsView(hosts=hosts_of(runs), mixed_rounds=mixed_rounds(runs),
                     medians={m: host_medians(runs, cases, sides, m) for m in metrics},
                     checks=host_checks(runs, cases, sides, baseline, metrics))
