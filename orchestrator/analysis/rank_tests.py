"""Two-sided p-values of the rank tests the reports give: Mann-Whitney U, Wilcoxon signed-rank and
Kruskal-Wallis H, written from the tests' definitions so that a report does not import
``scipy.stats`` (over a second of every report's and every sweep client's start).

Each follows the textbook choice between an exact null distribution and the normal (or chi-square)
approximation, the same choice ``scipy.stats`` makes by default (``tests/orchestrator/test_rank_tests.py``
checks every branch against it):

* Mann-Whitney U: exact when there are no ties and either sample has at most 8 values (the count of
  rank arrangements giving each U); otherwise normal with the tie correction and a continuity
  correction of 1/2.
* Wilcoxon signed-rank (zero differences dropped, Wilcoxon's rule): exact when there are no ties and
  no zeros and at most 50 differences; with ties or zeros and at most 13 differences, exact over all
  2^n sign assignments of the observed ranks; otherwise normal with the tie correction.
* Kruskal-Wallis: chi-square with k - 1 degrees of freedom, H corrected for ties.
"""

from __future__ import annotations

import itertools
import math
from functools import cache

import numpy as np

from orchestrator.analysis.distributions import chi2_sf, normal_sf

EXACT_MWU_MAX_SMALLER = 8  # Mann-Whitney: exact when a sample is this small and nothing ties
EXACT_SIGNED_RANK_MAX = 50  # Wilcoxon: exact up to this many differences when nothing ties
ENUMERATED_SIGNS_MAX = 13  # Wilcoxon with ties or zeros: every sign assignment up to this many
RELATIVE_TOLERANCE = 100 * np.finfo(float).eps  # ties of a statistic with its null values


def average_ranks(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(ranks 1..n with ties given their average rank, the size of each group of equal values)."""
    order = np.argsort(values, kind="mergesort")
    ordered = values[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    sizes = np.diff(np.r_[starts, values.size])
    group_ranks = starts + (sizes + 1) / 2.0  # the average of ranks start+1 .. start+size
    ranks = np.empty(values.size)
    ranks[order] = np.repeat(group_ranks, sizes)
    return ranks, sizes


def _tie_term(sizes: np.ndarray) -> float:
    return float(np.sum(sizes.astype(float) ** 3 - sizes))


def mann_whitney_p(x: np.ndarray, y: np.ndarray) -> float:
    """Two-sided p-value of Mann-Whitney U for samples ``x`` and ``y`` (finite, non-empty)."""
    n1, n2 = x.size, y.size
    ranks, sizes = average_ranks(np.concatenate([x, y]))
    u1 = float(ranks[:n1].sum()) - n1 * (n1 + 1) / 2
    u = max(u1, n1 * n2 - u1)
    if min(n1, n2) <= EXACT_MWU_MAX_SMALLER and not (sizes > 1).any():
        return float(_exact_mwu_p(min(n1, n2), n1 + n2)[int(round(u))])
    n = n1 + n2
    spread = math.sqrt(n1 * n2 / 12 * ((n + 1) - _tie_term(sizes) / (n * (n - 1))))
    if spread == 0:
        return 1.0  # every value equal: nothing speaks against equality
    z = (u - n1 * n2 / 2 - 0.5) / spread
    return float(min(1.0, 2 * normal_sf(z)))


def mann_whitney_p_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``mann_whitney_p`` of each row of ``x[m, n1]`` against the same row of ``y[m, n2]``: the rows
    the exact null decides (no ties, a sample of at most 8) at once, the others one at a time."""
    n1, n2 = x.shape[1], y.shape[1]
    pooled = np.concatenate([x, y], axis=1)
    ranks, plain = _row_ranks(pooled)
    plain &= min(n1, n2) <= EXACT_MWU_MAX_SMALLER
    p = np.empty(len(pooled))
    u1 = ranks[:, :n1].sum(axis=1) - n1 * (n1 + 1) / 2
    u = np.maximum(u1, n1 * n2 - u1)
    if plain.any():
        p[plain] = _exact_mwu_p(min(n1, n2), n1 + n2)[np.round(u[plain]).astype(int)]
    for i in np.flatnonzero(~plain):
        p[i] = mann_whitney_p(x[i], y[i])
    return p


def _row_ranks(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(ranks 1..n of each row of ``values[m, n]``, whether the row has no ties); a row with ties
    has ranks that are not its average ranks (``average_ranks``)."""
    order = np.argsort(values, axis=1, kind="mergesort")
    ordered = np.take_along_axis(values, order, axis=1)
    ranks = np.empty(values.shape)
    positions = np.broadcast_to(np.arange(1.0, values.shape[1] + 1), values.shape)
    np.put_along_axis(ranks, order, positions, axis=1)
    return ranks, ~(ordered[:, 1:] == ordered[:, :-1]).any(axis=1)


def _rank_sum_counts(k: int, n: int) -> np.ndarray:
    """How many k-subsets of ranks 1..n have each value of U (their rank sum less k(k+1)/2),
    U = 0 .. k(n-k): the Mann-Whitney null distribution of the smaller sample, as counts."""
    # by_size[j][s]: j-subsets of the ranks seen so far, by rank sum less j(j+1)/2 (the U of the
    # subset against the other ranks seen so far: each new rank adds the count of the others below it)
    top = k * (n - k)
    by_size = [np.zeros(top + 1) for _ in range(k + 1)]
    by_size[0][0] = 1.0
    for seen in range(n):
        for j in range(min(k, seen + 1), 0, -1):
            shift = seen - (j - 1)  # ranks below the new one that are not in the subset
            if shift <= top:
                by_size[j][shift:] += by_size[j - 1][:top + 1 - shift]
    return by_size[k]


def wilcoxon_p(differences: np.ndarray) -> float:
    """Two-sided p-value of the Wilcoxon signed-rank test of ``differences`` (finite) against 0;
    zeros are dropped from the ranks (Wilcoxon's rule). At least one difference must be non-zero."""
    n = differences.size
    nonzero = differences[differences != 0]
    ranks, sizes = average_ranks(np.abs(nonzero))
    r_plus = float(ranks[nonzero > 0].sum())
    count = nonzero.size
    ties, zeros = bool((sizes > 1).any()), count < n
    if not (ties or zeros) and n <= EXACT_SIGNED_RANK_MAX:
        return float(_exact_signed_rank_p(count)[int(r_plus)])  # no ties: r_plus is a whole number
    if n <= ENUMERATED_SIGNS_MAX:
        return _enumerated_signs_p(ranks, r_plus)
    mean = count * (count + 1) / 4
    spread = math.sqrt((count * (count + 1) * (2 * count + 1) - _tie_term(sizes) / 2) / 24)
    z = (r_plus - mean) / spread
    return float(2 * normal_sf(abs(z)))


@cache
def _exact_mwu_p(k: int, n: int) -> np.ndarray:
    """The exact two-sided Mann-Whitney p-value of each U (the larger of the two, 0 .. k(n - k)) of
    samples of k and n - k values without ties, from the null's counts."""
    counts = _rank_sum_counts(k, n)
    total = counts.sum()
    return np.array([min(1.0, 2 * (counts[u:].sum() / total)) for u in range(counts.size)])


@cache
def _exact_signed_rank_p(n: int) -> np.ndarray:
    """The exact two-sided signed-rank p-value of each rank sum 0 .. n(n+1)/2 of n differences
    without ties or zeros, from the null's counts."""
    counts = _signed_rank_counts(n)
    total = counts.sum()
    return np.array([min(1.0, 2 * min(counts[r:].sum() / total, counts[:r + 1].sum() / total))
                     for r in range(counts.size)])


def wilcoxon_p_rows(differences: np.ndarray) -> np.ndarray:
    """``wilcoxon_p`` of each row of ``differences[m, n]`` (finite, a non-zero one in every row): the
    rows without ties or zeros at once from the exact null, the others one at a time."""
    n = differences.shape[1]
    ranks, plain = _row_ranks(np.abs(differences))
    plain &= ~(differences == 0).any(axis=1) & (n <= EXACT_SIGNED_RANK_MAX)
    p = np.empty(len(differences))
    if plain.any():
        r_plus = np.where(differences > 0, ranks, 0.0).sum(axis=1)
        p[plain] = _exact_signed_rank_p(n)[r_plus[plain].astype(int)]
    for i in np.flatnonzero(~plain):
        p[i] = wilcoxon_p(differences[i])
    return p


def _signed_rank_counts(n: int) -> np.ndarray:
    """How many subsets of ranks 1..n have each rank sum 0 .. n(n+1)/2 (the signed-rank null, as counts)."""
    counts = np.zeros(n * (n + 1) // 2 + 1)
    counts[0] = 1.0
    for rank in range(1, n + 1):
        counts[rank:] = counts[rank:] + counts[:-rank].copy()
    return counts


def _enumerated_signs_p(ranks: np.ndarray, r_plus: float) -> float:
    """The signed-rank p-value over every assignment of signs to ``ranks`` (ties and zeros allowed)."""
    signs = np.array(list(itertools.product((0.0, 1.0), repeat=ranks.size)))
    null = signs @ ranks
    slack = abs(RELATIVE_TOLERANCE * r_plus)
    upper = np.mean(null >= r_plus - slack)
    lower = np.mean(null <= r_plus + slack)
    return float(min(1.0, 2 * min(upper, lower)))


def kruskal_p(samples: list[np.ndarray]) -> float:
    """p-value of the Kruskal-Wallis H test of ``samples`` (finite, not all values equal)."""
    pooled = np.concatenate(samples)
    ranks, sizes = average_ranks(pooled)
    n = pooled.size
    bounds = np.cumsum([0, *(s.size for s in samples)])
    h = 12 / (n * (n + 1)) * sum(ranks[a:b].sum() ** 2 / (b - a) for a, b in itertools.pairwise(bounds))
    h = (h - 3 * (n + 1)) / (1 - _tie_term(sizes) / (n ** 3 - n))
    return chi2_sf(h, len(samples) - 1)
