"""How often t statistics of few rounds leave a group-sequential band computed for normal ones, and
the share of alpha (``analysis.spending.T_SHARE``) that keeps them at or below alpha.

Seeded simulation of sweeps of normal rounds with the truth on the gate's bound (every look's
interval is centred on the truth, so any interval that misses it is a wrong claim): for each design
(first look, last look), spending function and alpha, the share of sweeps in which some look's
interval (the reports' trimmed t: paired over rounds, or two-sample unpaired) misses the truth,
with the band computed for each share of alpha. CPU-bound and deterministic; timings are not its
point.

Usage: python benchmarks/spending_calibration.py [--sweeps 40000] [--shares 0.7 0.75 0.8 1.0]
"""

from __future__ import annotations

import argparse

import numpy as np

from orchestrator.analysis import power, spending
from orchestrator.spec.schema import Spending

DESIGNS = ((2, 5), (2, 10), (3, 10), (3, 30), (5, 30), (10, 30), (3, 60), (20, 60))
SPENDINGS = (Spending.pocock, Spending.obrien_fleming)
ALPHAS = (0.05, 0.01, 0.10)


def ratios(t: np.ndarray, df: np.ndarray, first: int, last: int, kind: Spending, alpha: float,
           shares: list[float]) -> list[float]:
    """Wrong claims / alpha of the band computed for each share of ``alpha``."""
    return [power.missed(t, df, np.array(spending.normal_levels(first, last, share * alpha, kind))) / alpha
            for share in shares]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sweeps", type=int, default=40_000)
    parser.add_argument("--shares", type=float, nargs="+", default=[0.65, spending.T_SHARE, 0.75, 1.0])
    args = parser.parse_args()
    print(f"{args.sweeps} sweeps per design; each cell: wrong claims / alpha at shares {args.shares}")
    print("| design | pairing | spending | " + " | ".join(f"alpha {a:g}" for a in ALPHAS) + " |")
    print("|---|---|---|" + "---|" * len(ALPHAS))
    worst = np.zeros(len(args.shares))
    for first, last in DESIGNS:
        for paired in (True, False):
            rng = np.random.default_rng(first * 1000 + last + paired)
            cand, base = rng.normal(size=(2, args.sweeps, last))
            t, df = power.truth_statistics(cand, base, range(first, last + 1), paired=paired)
            for kind in SPENDINGS:
                found = [ratios(t, df, first, last, kind, alpha, args.shares) for alpha in ALPHAS]
                worst = np.maximum(worst, np.max(found, axis=0))
                print(f"| {first}-{last} | {'paired' if paired else 'unpaired'} | {kind.value} | "
                      + " | ".join(" ".join(f"{r:.2f}" for r in row) for row in found) + " |", flush=True)
    print("worst wrong claims / alpha per share: "
          + ", ".join(f"{share:g}: {ratio:.2f}" for share, ratio in zip(args.shares, worst, strict=True)))


if __name__ == "__main__":
    main()
