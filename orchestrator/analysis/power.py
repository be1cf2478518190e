"""What a gate can decide: the sequential rule of ``verdicts`` run on many simulated sweeps at once.

``decide`` applies exactly the rule a report applies to one cell (look after ``repeats`` rounds and
after every further one, each look's intervals at the confidences ``verdicts.claim_confidences``
gives its PASS and its FAIL under the sweep's boundary, the first look that decides is the verdict)
to arrays of simulated per-round values,
vectorised over sweeps. The tests check its error rates with it and ``benchmarks/power_curve.py``
prints the power curve users size sweeps with.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from orchestrator.analysis import intervals
from orchestrator.analysis.distributions import t_quantile
from orchestrator.analysis.sequential import Looks
from orchestrator.analysis.verdicts import Verdict, broken, claim_confidences, holds
from orchestrator.capabilities import INSTRUCTIONS_METRIC
from orchestrator.spec.schema import GateSpec

_WIDTH = max(len(v) for v in Verdict)  # of the fixed-width string array holding the verdicts


@dataclass(frozen=True)
class Decisions:
    """Per simulated sweep: the verdict (a ``Verdict`` value) and the rounds it used."""

    verdict: np.ndarray
    rounds: np.ndarray

    def rate(self, verdict: Verdict) -> float:
        return float(np.mean(self.verdict == verdict))


def decide(cand_logs: np.ndarray, base_logs: np.ndarray, looks: Looks, gate: GateSpec, *,
           paired: bool = True) -> Decisions:
    """The sequential verdict of ``gate`` (its bounds, confidence and kind) on log values
    ``[sweeps, looks.final]`` (of a gate on ``instructions``: counts, ``intervals.with_counts``)."""
    sweeps = cand_logs.shape[0]
    verdict = np.full(sweeps, Verdict.INCONCLUSIVE, dtype=f"U{_WIDTH}")
    rounds = np.full(sweeps, looks.final)
    bounds = [(op, np.log(value)) for op, value in gate.bounds]
    for n in (range(looks.first, looks.final + 1) if looks.adaptive else [looks.first]):
        if paired:
            interval = intervals.paired(cand_logs[:, :n] - base_logs[:, :n])
        else:
            interval = intervals.unpaired(cand_logs[:, :n], base_logs[:, :n])
        if gate.metric == INSTRUCTIONS_METRIC:
            interval = intervals.with_counts(cand_logs[:, :n], base_logs[:, :n], interval)
        with np.errstate(divide="ignore"):  # a bound of 0: an early look that cannot decide
            passing, failing = ([np.log(b) for b in interval.bounds(confidence)]
                                for confidence in claim_confidences(gate, looks, n))
        open_ = verdict == Verdict.INCONCLUSIVE
        failed = open_ & np.logical_or.reduce([broken(op, bound, *failing) for op, bound in bounds])
        passed = open_ & ~failed & np.logical_and.reduce([holds(op, bound, *passing) for op, bound in bounds])
        verdict[passed], verdict[failed] = Verdict.PASS, Verdict.FAIL
        rounds[passed | failed] = n
        if not (verdict == Verdict.INCONCLUSIVE).any():
            break
    return Decisions(verdict, rounds)


def truth_statistics(cand_logs: np.ndarray, base_logs: np.ndarray, rounds: range, *, paired: bool = True
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Per look after each of ``rounds``, ``[looks, sweeps]``: how many standard errors the interval's
    centre lies from a true log ratio of 0 (``|t|``), and its degrees of freedom."""
    t, df = [], []
    for n in rounds:
        if paired:
            interval = intervals.paired(cand_logs[:, :n] - base_logs[:, :n])
        else:
            interval = intervals.unpaired(cand_logs[:, :n], base_logs[:, :n])
        t.append(np.abs(interval.center) / interval.se)
        df.append(interval.df)
    return np.array(t), np.array(df)


def missed(t: np.ndarray, df: np.ndarray, levels: np.ndarray) -> float:
    """The share of sweeps in which the interval of some look, at that look's two-sided ``levels``,
    misses the truth (``truth_statistics``)."""
    critical = t_quantile(1 - np.asarray(levels)[:, None] / 2, df)
    return float(np.mean((t >= critical).any(axis=0)))


NOISES: tuple[str, ...] = ("lognormal", "bursts", "heavy tails")  # the run-noise models of ``simulate``


def simulate(rng: np.random.Generator, sweeps: int, rounds: int, *, cv: float, true_ratio: float,
             paired: bool = True, noise: str = "lognormal") -> tuple[np.ndarray, np.ndarray]:
    """Log values ``[sweeps, rounds]`` of a higher-is-better metric per side. Each run is a process
    with its own offset of s.d. ``sqrt(log(1 + cv**2))``: normal on the log scale (``lognormal``),
    or Student t with 3 degrees of freedom scaled to that s.d. (``heavy tails``); ``bursts`` adds
    to lognormal offsets a neighbour that slows one run in 20 by 10-40 %. Paired rounds also share a
    round factor (it cancels)."""
    sigma = float(np.sqrt(np.log1p(cv ** 2)))
    shape = (sweeps, rounds)

    def offsets() -> np.ndarray:
        if noise == "heavy tails":
            return sigma * rng.standard_t(3.0, shape) / np.sqrt(3.0)
        logs = rng.normal(0.0, sigma, shape)
        if noise == "bursts":
            logs -= np.where(rng.random(shape) < 0.05, np.log(rng.uniform(1.1, 1.4, shape)), 0.0)
        return logs

    cand, base = np.log(true_ratio) + offsets(), offsets()
    if paired:
        shared = rng.normal(0.0, 3 * sigma, shape)
        cand, base = cand + shared, base + shared
    return cand, base
