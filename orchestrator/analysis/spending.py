"""Group-sequential boundaries: the two-sided error rate each look of an adaptive sweep reads its
interval at (docs/design.md, "Statistics", sequential design).

An adaptive sweep looks at a gate after ``first`` rounds and after every further round up to
``last``; a look's interval that misses the true ratio is the only way to a wrong PASS or FAIL.

* ``even`` (Bonferroni): the first look may miss ``alpha * first / last``, every later one
  ``alpha / last``; by the union bound the looks together miss at most ``alpha``, however they
  correlate. Simple, and wasteful: neighbouring looks share all but one round.
* ``pocock`` and ``obrien-fleming`` (Lan-DeMets spending functions of the information fraction
  ``t = n / last``: ``alpha ln(1 + (e - 1) t)`` and ``2 - 2 Phi(z(1 - alpha/2) / sqrt(t))``): the
  looks up to ``n`` rounds may together miss ``alpha(t)``. Each look's critical value is solved
  so that the chance the standardized mean of normal rounds *first* leaves the band at that look
  is what the function adds there, the looks' correlation (``sqrt(n_j / n_k)``) included by
  numerical integration over the sweeps still undecided (Armitage, McPherson and Rowe's
  recursion on a lattice). Pocock's function spends evenly in time, O'Brien-Fleming's almost
  nothing early and most at the last looks.

A sweep its time budget ends after ``closing`` rounds, before ``last`` (``budget_s``, ``shasweep ci
--budget``: when it ends depends on how long rounds take, not on what they measured), closes the
boundary there: the looks before it keep their levels and its look spends what they left of
``alpha`` (Lan and DeMets' final analysis at the information reached). Without that, an
O'Brien-Fleming sweep planned for 26 rounds and ended at 21 would have spent a third of its error
rate and read its last interval 20 % wider than it may.

A look then reads its t interval at the nominal level of its normal critical value, converted
with the look's own degrees of freedom. The variance a t statistic estimates at each look adds
its own noise, so t statistics of few rounds leave such a band more often than normal ones (up to
1.4 ``alpha`` measured for a band at ``alpha``); the band is therefore computed for ``T_SHARE`` of
``alpha``, which keeps every measured design's wrong claims at or below ``alpha``
(``benchmarks/spending_calibration.py`` regenerates the measurement).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np
from scipy import special

from orchestrator.spec.schema import Spending

T_SHARE = 0.7  # of alpha the normal band is computed for, so that t statistics keep alpha
STEP = 0.1  # lattice spacing of the integration, in standard deviations of one round's sum
SPAN = 8.5  # standard deviations of the sum beyond which nothing is integrated (mass < 1e-16)
KERNEL = 8.5  # standard deviations of one round's step the convolution kernel reaches


def spent(spending: Spending, alpha: float, fraction: float) -> float:
    """The error rate the looks up to information ``fraction`` (0-1] may spend together."""
    if spending == Spending.pocock:
        return alpha * math.log1p((math.e - 1) * fraction)
    if spending == Spending.obrien_fleming:
        return float(2 * special.ndtr(-special.ndtri(1 - alpha / 2) / math.sqrt(fraction)))
    raise ValueError(f"{spending.value} is no spending function")


@lru_cache(maxsize=64)
def look_levels(first: int, last: int, alpha: float, spending: Spending, closing: int | None = None
                ) -> tuple[float, ...]:
    """The two-sided nominal error rate of the looks after ``first``, ``first + 1``, ..., ``last``
    rounds, or up to ``closing`` rounds where the sweep's budget closed the boundary there (its look
    spends what the looks before it left); a look of fewer than 2 rounds (no interval) spends
    nothing."""
    if spending == Spending.even:
        levels = [alpha * (first if n == first else 1) / last for n in range(first, (closing or last) + 1)]
        return tuple(levels[:-1]) + (alpha - sum(levels[:-1]),) if closing else tuple(levels)
    return normal_levels(first, last, T_SHARE * alpha, spending, closing)


def normal_levels(first: int, last: int, alpha: float, spending: Spending, closing: int | None = None
                  ) -> tuple[float, ...]:
    """The nominal levels of the looks' band for normal statistics at ``alpha``: the chance that the
    standardized mean of normal rounds leaves it at some look is ``alpha``. ``closing``: the last
    look, which spends all of ``alpha`` the looks before it left."""
    rounds = np.arange(first, (closing or last) + 1)
    targets = [alpha if n == closing else spent(spending, alpha, n / last) if n >= 2 else 0.0 for n in rounds]
    return tuple(_crossing_levels(rounds.astype(float), targets))


@dataclass(frozen=True)
class _Undecided:
    """The probability mass of the sum ``S`` of standardized rounds over the sweeps no look decided
    yet: ``inner`` at the lattice points ``(low + i) * STEP``, ``extra`` at ``extra_nodes`` (a
    band's two edges)."""

    low: int
    inner: np.ndarray
    extra_nodes: np.ndarray
    extra: np.ndarray

    @cached_property
    def nodes(self) -> np.ndarray:
        return np.concatenate([(self.low + np.arange(self.inner.size)) * STEP, self.extra_nodes])

    @cached_property
    def masses(self) -> np.ndarray:
        return np.concatenate([self.inner, self.extra])


_START = _Undecided(0, np.ones(1), np.zeros(0), np.zeros(0))  # S = 0 before the first round


def _crossing_levels(information: np.ndarray, targets: list[float]) -> list[float]:
    """Per look, the two-sided nominal level of the band whose first crossing by the normal sum at
    that look makes the crossings so far add up to ``targets[k]`` (cumulative)."""
    levels, total, previous, undecided = [], 0.0, 0.0, _START
    for info, target in zip(information, targets, strict=True):
        sigma = math.sqrt(info - previous)
        edge = _solve_edge(undecided, sigma, target - total, info)
        total += _crossing(undecided, sigma, edge)
        levels.append(float(2 * special.ndtr(-edge / math.sqrt(info))))
        undecided = _inside(undecided, sigma, min(edge, SPAN * math.sqrt(info)))
        previous = info
    return levels


def _inside(undecided: _Undecided, sigma: float, edge: float) -> _Undecided:
    """``undecided`` one normal step of ``sigma`` later, inside the band ``|S| < edge``: its density
    at the lattice points inside and at the two edges, weighted by the trapezoid rule."""
    top = math.ceil(edge / STEP) - 1
    points = np.concatenate([[-edge], np.arange(-top, top + 1) * STEP, [edge]])
    gaps = np.diff(points)
    weights = np.concatenate([gaps, [0.0]]) / 2 + np.concatenate([[0.0], gaps]) / 2
    masses = weights * _density(undecided, sigma, points, -top)
    return _Undecided(-top, masses[1:-1], points[[0, -1]], masses[[0, -1]])


def _density(undecided: _Undecided, sigma: float, points: np.ndarray, low: int) -> np.ndarray:
    """The density of ``S`` one step of ``sigma`` after ``undecided`` at ``points`` (the edges
    first and last, the lattice points from index ``low`` between): the lattice part by one
    convolution, the rest directly."""
    reach = math.ceil(KERNEL * sigma / STEP)
    kernel = _normal_pdf(np.arange(-reach, reach + 1) * STEP, sigma)
    spread = np.convolve(undecided.inner, kernel)  # at lattice indices undecided.low - reach, ...
    at = np.arange(low, low + points.size - 2) - (undecided.low - reach)
    density = np.empty(points.size)
    density[1:-1] = np.where((at >= 0) & (at < spread.size), spread[np.clip(at, 0, spread.size - 1)], 0.0)
    density[1:-1] += _normal_pdf(points[1:-1, None] - undecided.extra_nodes[None, :], sigma) @ undecided.extra
    density[[0, -1]] = _normal_pdf(points[[0, -1], None] - undecided.nodes[None, :], sigma) @ undecided.masses
    return density


def _normal_pdf(x: np.ndarray, sigma: float) -> np.ndarray:
    return np.exp(-0.5 * (x / sigma) ** 2) / (sigma * math.sqrt(2 * math.pi))


def _crossing(undecided: _Undecided, sigma: float, edge: float) -> float:
    """The probability that one step of ``sigma`` takes an undecided sweep to ``|S| >= edge``."""
    return _crossing_and_slope(undecided, sigma, edge)[0]


def _crossing_and_slope(undecided: _Undecided, sigma: float, edge: float) -> tuple[float, float]:
    """``_crossing`` and its derivative in ``edge``."""
    if math.isinf(edge):
        return 0.0, 0.0
    near = np.abs(undecided.nodes) > edge - KERNEL * sigma  # the others cannot reach the edge
    nodes, masses = undecided.nodes[near], undecided.masses[near]
    below, above = (-edge - nodes) / sigma, (nodes - edge) / sigma
    crossing = masses @ (special.ndtr(below) + special.ndtr(above))
    density = np.exp(-0.5 * below ** 2) + np.exp(-0.5 * above ** 2)
    slope = -float(masses @ density) / (sigma * math.sqrt(2 * math.pi))
    return float(crossing), slope


def _solve_edge(undecided: _Undecided, sigma: float, target: float, info: float) -> float:
    """The band edge whose crossing probability is ``target`` (infinite when nothing is left to
    spend): Newton's method on the log of the crossing probability, kept inside a bisection bracket
    whose upper end is the edge of the unconditional normal sum (which crosses more)."""
    if target <= 1e-15:
        return math.inf
    low = 0.0
    high = edge = float(special.ndtri(1 - target / 2)) * math.sqrt(info)
    for _ in range(200):
        crossing, slope = _crossing_and_slope(undecided, sigma, edge)
        if crossing > target:
            low = edge
        else:
            high = edge
        if high - low <= 1e-12 * high or crossing > 0 and abs(math.log(crossing / target)) < 1e-10:
            break
        newton = edge - math.log(crossing / target) * crossing / slope if crossing > 0 and slope < 0 else -1.0
        edge = newton if low < newton < high else (low + high) / 2
    return edge
