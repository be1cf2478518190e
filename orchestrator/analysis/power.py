"""What a gate can decide: the sequential rule of ``verdicts`` run on many simulated sweeps at once.

``decide`` applies exactly the rule a report applies to one cell (look after ``repeats`` rounds and
after every further one, each look's interval at the confidence ``sequential.Looks`` allows, the
first interval entirely on one side of the bound decides) to arrays of simulated per-round values,
vectorised over sweeps. The tests check its error rates with it and ``benchmarks/power_curve.py``
prints the power curve users size sweeps with.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from orchestrator.analysis import intervals
from orchestrator.analysis.sequential import Looks
from orchestrator.analysis.verdicts import Verdict

_WIDTH = max(len(v) for v in Verdict)  # of the fixed-width string array holding the verdicts


@dataclass(frozen=True)
class Decisions:
    """Per simulated sweep: the verdict (a ``Verdict`` value) and the rounds it used."""

    verdict: np.ndarray
    rounds: np.ndarray

    def rate(self, verdict: Verdict) -> float:
        return float(np.mean(self.verdict == verdict))


def decide(cand_logs: np.ndarray, base_logs: np.ndarray, looks: Looks, *, min_ratio: float,
           confidence: float = 0.95, paired: bool = True) -> Decisions:
    """The sequential verdict of a ``>= min_ratio`` gate on log values ``[sweeps, looks.last]``."""
    sweeps = cand_logs.shape[0]
    verdict = np.full(sweeps, Verdict.INCONCLUSIVE, dtype=f"U{_WIDTH}")
    rounds = np.full(sweeps, looks.last)
    bound = np.log(min_ratio)
    for n in (range(looks.first, looks.last + 1) if looks.adaptive else [looks.first]):
        if paired:
            interval = intervals.paired(cand_logs[:, :n] - base_logs[:, :n])
        else:
            interval = intervals.unpaired(cand_logs[:, :n], base_logs[:, :n])
        low, high = (np.log(b) for b in interval.bounds(looks.confidence_at(n, confidence)))
        open_ = verdict == Verdict.INCONCLUSIVE
        passed, failed = open_ & (low >= bound), open_ & (high < bound)
        verdict[passed], verdict[failed] = Verdict.PASS, Verdict.FAIL
        rounds[passed | failed] = n
        if not (verdict == Verdict.INCONCLUSIVE).any():
            break
    return Decisions(verdict, rounds)


def simulate(rng: np.random.Generator, sweeps: int, rounds: int, *, cv: float, true_ratio: float,
             paired: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Lognormal per-run noise of ``cv``; paired rounds also share a round factor (cancels)."""
    sigma = float(np.sqrt(np.log1p(cv ** 2)))
    cand = rng.normal(np.log(true_ratio), sigma, (sweeps, rounds))
    base = rng.normal(0.0, sigma, (sweeps, rounds))
    if paired:
        shared = rng.normal(0.0, 3 * sigma, (sweeps, rounds))
        cand, base = cand + shared, base + shared
    return cand, base

