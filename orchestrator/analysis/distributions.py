"""Quantiles and tail probabilities of the t, normal and chi-square distributions.

Straight from ``scipy.special`` (Student's t inverse ``stdtrit``, the normal's ``ndtr``,
the chi-square tail ``chdtrc``): the same functions ``scipy.stats`` evaluates, without importing
``scipy.stats`` (over a second of start-up, paid by every report and every sweep's client before).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from scipy import special


def t_quantile(p: float | np.ndarray, df: float | np.ndarray) -> np.ndarray:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom (infinite ``df``: the
    normal's); NaN where ``df`` is not positive or ``p`` is outside [0, 1]. A scalar's is kept: a
    report asks for the same few (confidence, df) pairs once per cell, 10,000 times in a suite's."""
    if np.ndim(p) == 0 and np.ndim(df) == 0:
        return _scalar_t_quantile(float(p), float(df))
    return _t_quantiles(p, df)


@lru_cache(maxsize=4096)
def _scalar_t_quantile(p: float, df: float) -> np.ndarray:
    return _t_quantiles(p, df)


def _t_quantiles(p: float | np.ndarray, df: float | np.ndarray) -> np.ndarray:
    p, df = np.broadcast_arrays(np.asarray(p, dtype=float), np.asarray(df, dtype=float))
    valid = (df > 0) & (p >= 0) & (p <= 1)
    inner = valid & (p > 0) & (p < 1)
    with np.errstate(invalid="ignore"):
        quantile = special.stdtrit(np.where(inner, df, 1.0), np.where(inner, p, 0.5))
    ends = np.where(p == 0, -np.inf, np.inf)
    return np.where(valid, np.where(inner, quantile, ends), np.nan)[()]


def normal_sf(z: float | np.ndarray) -> np.ndarray:
    """``P(Z > z)`` for a standard normal ``Z``."""
    return special.ndtr(-np.asarray(z, dtype=float))


def chi2_sf(x: float, df: int) -> float:
    """``P(X > x)`` for a chi-square ``X`` with ``df`` degrees of freedom."""
    return float(special.chdtrc(df, x))
