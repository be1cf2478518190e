"""What a gate can decide: the sequential rule of ``verdicts`` run on many simulated sweeps at once.

``decide`` applies exactly the rule a report applies to one cell (look after ``repeats`` rounds and
after every further one, each look's interval at the confidence ``sequential.Looks`` allows, the
first interval entirely on one side of the bound decides) to arrays of simulated per-round values,
vectorised over sweeps. The tests check its error rates with it, ``benchmarks/power_curve.py`` prints
the power curve users size sweeps with, and ``expected_rounds`` gives ``shasweep plan`` its estimate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from orchestrator.analysis import intervals
from orchestrator.analysis.sequential import Looks

PASS, FAIL, INCONCLUSIVE = 1, -1, 0


@dataclass(frozen=True)
class Decisions:
    """Per simulated sweep: the verdict (PASS 1, FAIL -1, INCONCLUSIVE 0) and the rounds it used."""

    verdict: np.ndarray
    rounds: np.ndarray

    def rate(self, verdict: int) -> float:
        return float(np.mean(self.verdict == verdict))


def decide(cand_logs: np.ndarray, base_logs: np.ndarray, looks: Looks, *, min_ratio: float,
           confidence: float = 0.95, paired: bool = True) -> Decisions:
    """The sequential verdict of a ``>= min_ratio`` gate on log values ``[sweeps, looks.last]``."""
    sweeps = cand_logs.shape[0]
    verdict = np.zeros(sweeps, dtype=int)
    rounds = np.full(sweeps, looks.last)
    bound = np.log(min_ratio)
    for n in (range(looks.first, looks.last + 1) if looks.adaptive else [looks.first]):
        if paired:
            interval = intervals.paired(cand_logs[:, :n] - base_logs[:, :n])
        else:
            interval = intervals.unpaired(cand_logs[:, :n], base_logs[:, :n])
        low, high = (np.log(b) for b in interval.bounds(looks.confidence_at(n, confidence)))
        open_ = verdict == INCONCLUSIVE
        passed, failed = open_ & (low >= bound), open_ & (high < bound)
        verdict[passed], verdict[failed] = PASS, FAIL
        rounds[passed | failed] = n
        if not (verdict == INCONCLUSIVE).any():
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


def expected_rounds(cv: float, true_ratio: float, looks: Looks, *, min_ratio: float,
                    confidence: float = 0.95, sweeps: int = 400, seed: int = 0) -> tuple[float, float]:
    """(mean rounds used, share decided) of a paired gate at run noise ``cv`` (seeded simulation)."""
    cand, base = simulate(np.random.default_rng(seed), sweeps, looks.last, cv=cv, true_ratio=true_ratio)
    result = decide(cand, base, looks, min_ratio=min_ratio, confidence=confidence)
    return float(result.rounds.mean()), 1 - result.rate(INCONCLUSIVE)
