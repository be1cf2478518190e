"""The statistics of lockstep rounds (docs/design.md, "Statistics", lockstep).

In a lockstep round every side's process is resident and the host is given to one at a time, one
block of steps each, in cycles in which every side runs once (``worker.lockstep.turn_order``). A
side's block and the baseline's block of the same cycle ran seconds apart: a *block pair*. The
round's estimate of a side's log ratio is the median of its block pairs' log ratios: a burst of a
neighbour that hits a few blocks moves a few pairs and not the median, where it would move the
ratio of the two processes' totals. Rounds (process pairs) stay the independent units of the
interval, because each process carries its own speed offset (memory layout, page placement) that
no pairing of its blocks can cancel. ``tests/orchestrator/test_lockstep_stats.py`` measures the
coverage and the sequential error rates on simulated hosts.
"""

from __future__ import annotations

import numpy as np


def round_log_ratios(pair_log_ratios: np.ndarray) -> np.ndarray:
    """Per-round estimates from block-pair log ratios ``[..., pairs]``: their median."""
    return np.median(pair_log_ratios, axis=-1)
