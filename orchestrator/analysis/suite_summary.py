"""The summary row of a suite's cases: the geometric mean of their candidate/baseline ratios, with an
interval (docs/design.md, "Suites").

The geometric mean ratio of ``K`` cases is ``exp(mean_k log ratio_k)``. Per round ``r`` each side's
mean log value over the cases, ``A_r = mean_k log cand[k, r]`` and ``B_r = mean_k log base[k, r]``,
is one number, and rounds are independent of each other (whatever the cases of one round share), so
the interval is the ordinary one of those per-round means (``intervals``): paired by round, the
one-sample t of ``A_r - B_r``; unpaired, the two-sample t of ``A`` against ``B``. The caller passes
complete rounds only (every case has its value on both sides). Coverage is measured by seeded
simulation in ``tests/orchestrator/test_suite_summary.py``.
"""

from __future__ import annotations

import numpy as np

from orchestrator.analysis import intervals


def geomean_interval(cand_logs: np.ndarray, base_logs: np.ndarray, *, paired: bool) -> intervals.LogInterval:
    """The interval of the geometric mean ratio from log values ``[..., cases, rounds]`` of each side
    (at least 2 rounds)."""
    cand, base = np.asarray(cand_logs, float).mean(axis=-2), np.asarray(base_logs, float).mean(axis=-2)
    return intervals.paired(cand - base) if paired else intervals.unpaired(cand, base)
