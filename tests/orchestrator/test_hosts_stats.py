"""Statistics by host (orchestrator.analysis.host_agreement): pairing blocks never span hosts, and the
sick-host flag's family-wise false-alarm rate and power, checked by seeded simulations over many sweeps."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from orchestrator.analysis import host_agreement as hosts
from orchestrator.analysis.verdicts import Comparer

CASES = ["sac/a/x", "sac/b/x"]
SIDES = ["base", "cand"]
SWEEPS = 300


def fleet_runs(rng: np.random.Generator, *, n_hosts: int = 3, rounds_per_host: int = 8, ratio: float = 0.95,
               noise: float = 0.02, sick: dict[str, float] | None = None) -> pd.DataFrame:
    """Runs of a fleet sweep: each round whole on one host (round-robin), a per-round disturbance common
    to both sides, independent lognormal noise per run; ``sick`` multiplies one host's candidate."""
    rows = []
    for repeat in range(n_hosts * rounds_per_host):
        host = f"h{repeat % n_hosts}"
        machine = rng.lognormal(0.0, 0.05)  # the host's speed that round: cancels in the ratio
        for case in CASES:
            for side in SIDES:
                effect = ratio * (sick or {}).get(host, 1.0) if side == "cand" else 1.0
                value = 1000.0 * machine * effect * rng.lognormal(0.0, noise)
                rows.append({"case": case, "side": side, "repeat": repeat, "host_id": host,
                             "throughput": value})
    return pd.DataFrame(rows)


def flagged(runs: pd.DataFrame) -> list[hosts.HostCheck]:
    return [c for c in hosts.host_checks(runs, CASES, SIDES, "base", ["throughput"]) if c.flagged]


@pytest.mark.slow
def test_false_alarm_rate_when_all_hosts_agree_is_within_the_family_level():
    rng = np.random.default_rng(1)
    alarms = sum(bool(flagged(fleet_runs(rng))) for _ in range(SWEEPS))
    # family-wise level 5%: the observed rate must not exceed it beyond binomial noise (3 sd)
    limit = hosts.FAMILY_ALPHA + 3 * np.sqrt(hosts.FAMILY_ALPHA * (1 - hosts.FAMILY_ALPHA) / SWEEPS)
    assert alarms / SWEEPS <= limit, f"{alarms} of {SWEEPS} agreeing fleets flagged a host"


@pytest.mark.slow
def test_a_host_whose_ratio_is_off_by_10_percent_is_found_and_named():
    rng = np.random.default_rng(2)
    hits = wrong = 0
    for _ in range(SWEEPS):
        found = flagged(fleet_runs(rng, sick={"h1": 0.90}))
        hits += any(c.host == "h1" for c in found)
        wrong += any(c.host != "h1" for c in found)
    assert hits / SWEEPS >= 0.95, f"power {hits / SWEEPS:.2f}"
    assert wrong / SWEEPS <= 0.02, f"a healthy host flagged in {wrong} of {SWEEPS} sweeps"


@pytest.mark.slow
def test_a_host_off_by_5_percent_is_usually_found():
    """Half the effect: the per-host medians of 8 rounds (about 1.2% noise each) still show it mostly;
    which host is farthest from the others is then less certain."""
    rng = np.random.default_rng(9)
    hits = sum(any(c.host == "h1" for c in flagged(fleet_runs(rng, sick={"h1": 0.95})))
               for _ in range(SWEEPS))
    assert hits / SWEEPS >= 0.8, f"power {hits / SWEEPS:.2f}"


def test_two_hosts_that_disagree_are_both_flagged():
    rng = np.random.default_rng(8)
    found = {c.host for c in flagged(fleet_runs(rng, n_hosts=2, sick={"h1": 0.9}))}
    assert found == {"h0", "h1"}


def test_a_one_percent_difference_is_not_a_sick_host_however_many_rounds():
    rng = np.random.default_rng(3)
    alarms = sum(bool(flagged(fleet_runs(rng, rounds_per_host=30, noise=0.002, sick={"h2": 0.995})))
                 for _ in range(50))
    assert alarms == 0


def test_too_few_rounds_per_host_are_not_tested():
    runs = fleet_runs(np.random.default_rng(4), rounds_per_host=hosts.MIN_ROUNDS - 1, sick={"h0": 0.5})
    assert hosts.host_checks(runs, CASES, SIDES, "base", ["throughput"]) == []


def test_a_single_host_has_no_checks():
    runs = fleet_runs(np.random.default_rng(5), n_hosts=1)
    assert hosts.hosts_of(runs) == ["h0"]
    assert hosts.host_checks(runs, CASES, SIDES, "base", ["throughput"]) == []


def test_a_round_that_mixes_hosts_is_never_paired_across_them():
    runs = fleet_runs(np.random.default_rng(6), n_hosts=2, rounds_per_host=3)
    assert hosts.mixed_rounds(runs) == [] and hosts.pairing_blocks(runs) is runs
    mixed = runs.copy()
    moved = (mixed["repeat"] == 0) & (mixed["side"] == "cand")
    mixed.loc[moved, "host_id"] = "h1"  # round 0: baseline on h0, candidate on h1
    assert hosts.mixed_rounds(mixed) == [0]
    blocks = hosts.pairing_blocks(mixed)
    keys = blocks.groupby("repeat")["host_id"].nunique()
    assert (keys == 1).all(), "every pairing block is on one host"
    assert len(blocks) == len(mixed) and set(blocks.loc[moved, "repeat"]).isdisjoint(set(runs["repeat"]))
    comparer = Comparer(blocks, "base", "interleaved")
    comparison = comparer.compare(CASES[0], "cand", "throughput")
    rounds = runs["repeat"].nunique()
    assert comparison.paired and comparison.n_candidate == rounds - 1, \
        "the mixed round's blocks differ between the sides, so only the other rounds pair"
    fine = Comparer(hosts.pairing_blocks(runs), "base", "interleaved")
    assert fine.compare(CASES[0], "cand", "throughput").paired


@pytest.mark.parametrize("metric", ["throughput", "missing_ms"])
def test_medians_per_host(metric):
    runs = fleet_runs(np.random.default_rng(7), n_hosts=2, rounds_per_host=3)
    table = hosts.host_medians(runs, CASES, SIDES, metric)
    if metric == "missing_ms":
        assert table.empty
        return
    assert list(table.columns) == ["h0", "h1"] and list(table.index) == [(c, s) for c in CASES for s in SIDES]
    expected = runs[(runs["host_id"] == "h1") & (runs["case"] == CASES[0]) & (runs["side"] == "cand")]
    assert table.loc[(CASES[0], "cand"), "h1"] == pytest.approx(expected["throughput"].median())
