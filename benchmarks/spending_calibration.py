"""How often t statistics of few rounds leave a group-sequential band computed for normal ones, and
the share of alpha (``analysis.spending.T_SHARE``) that keeps them at or below alpha.

Seeded simulation of sweeps of normal rounds with the truth on the gate's bound (every look's
interval is centred on the truth, so any interval that misses it is a wrong claim): for each design
(first look, last look), spending function and alpha, the share of sweeps in which some look's
interval (the reports' trimmed t: paired over rounds, or two-sample unpaired) misses the truth,
with the band computed for each share of alpha. A design ``first-last@closing`` is one a time
budget ended after ``closing`` rounds: its last look spends what the looks before it left. CPU-bound
and deterministic; timings are not its point.

Usage: python benchmarks/spending_calibration.py [--sweeps 40000] [--shares 0.7 0.75 0.8 1.0]
"""

from __future__ import annotations

import argparse

import numpy as np

from orchestrator.analysis import power, spending
from orchestrator.spec.schema import Spending

DESIGNS = ((2, 5, None), (2, 10, None), (3, 10, None), (3, 30, None), (5, 30, None), (10, 30, None),
           (3, 60, None), (20, 60, None), (3, 30, 12), (2, 26, 15), (2, 26, 21), (3, 60, 40))
SPENDINGS = (Spending.pocock, Spending.obrien_fleming)
ALPHAS = (0.05, 0.01, 0.10)


def ratios(t: np.ndarray, df: np.ndarray, design: tuple[int, int, int | None], kind: Spending, alpha: float,
           shares: list[float]) -> list[float]:
    """Wrong claims / alpha of the band computed for each share of ``alpha``."""
    return [power.missed(t, df, np.array(spending.normal_levels(*design[:2], share * alpha, kind, design[2])))
            / alpha for share in shares]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sweeps", type=int, default=40_000)
    parser.add_argument("--shares", type=float, nargs="+", default=[0.65, spending.T_SHARE, 0.75, 1.0])
    args = parser.parse_args()
    print(f"{args.sweeps} sweeps per design; each cell: wrong claims / alpha at shares {args.shares}")
    print("| design | pairing | spending | " + " | ".join(f"alpha {a:g}" for a in ALPHAS) + " |")
    print("|---|---|---|" + "---|" * len(ALPHAS))
    worst = np.zeros(len(args.shares))
    for first, last, closing in DESIGNS:
        final = closing or last
        for paired in (True, False):
            rng = np.random.default_rng(first * 1000 + last + paired)
            cand, base = rng.normal(size=(2, args.sweeps, final))
            t, df = power.truth_statistics(cand, base, range(first, final + 1), paired=paired)
            for kind in SPENDINGS:
                found = [ratios(t, df, (first, last, closing), kind, alpha, args.shares) for alpha in ALPHAS]
                worst = np.maximum(worst, np.max(found, axis=0))
                name = f"{first}-{last}" + (f"@{closing}" if closing else "")
                print(f"| {name} | {'paired' if paired else 'unpaired'} | {kind.value} | "
                      + " | ".join(" ".join(f"{r:.2f}" for r in row) for row in found) + " |", flush=True)
    print("worst wrong claims / alpha per share: "
          + ", ".join(f"{share:g}: {ratio:.2f}" for share, ratio in zip(args.shares, worst, strict=True)))


if __name__ == "__main__":
    main()
