"""Which runs the host disturbed, from the columns ``worker.disturbance`` records with every run.

A run is flagged when, over its measured window, the host's CPU steal exceeded ``STEAL_LIMIT`` of
its CPU time, the 1-minute load average before or after exceeded the host's logical CPUs (more
runnable work than CPUs: something else competed with the bench), or its step-time CV was more than
``STEP_CV_FACTOR`` times the median of its (case, side) cell. Flagged runs stay in the statistics
(the trimmed intervals limit their pull); the report lists them, and ``rerun_disturbed: true`` runs
each of them again once.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

STEAL_LIMIT = 0.05
STEP_CV_FACTOR = 3.0
COLUMNS: tuple[str, ...] = ("host_steal_frac", "host_load_before", "host_load_after", "host_step_cv")


def disturbed_reasons(runs: pd.DataFrame) -> pd.Series:
    """Per run (same index as ``runs``): why it counts as disturbed, or None."""
    def column(name: str) -> pd.Series:
        if name not in runs:
            return pd.Series(float("nan"), index=runs.index)
        return pd.to_numeric(runs[name], errors="coerce")

    steal, cpus = column("host_steal_frac"), column("host_cpu_logical")
    load = pd.concat([column("host_load_before"), column("host_load_after")], axis=1).max(axis=1)
    step_cv = column("host_step_cv")
    cell_cv = step_cv.groupby([runs["case"], runs["side"]]).transform("median") if len(runs) else step_cv
    stolen, loaded = (steal > STEAL_LIMIT).to_numpy(), (load > cpus).to_numpy()
    noisy = ((step_cv > STEP_CV_FACTOR * cell_cv) & (cell_cv > 0)).to_numpy()
    reasons = np.full(len(runs), None, dtype=object)
    for i in np.flatnonzero(stolen | loaded | noisy):  # the rules on whole columns; words for the flagged
        why = []
        if stolen[i]:
            why.append(f"CPU steal {100 * steal.iloc[i]:.0f}%")
        if loaded[i]:
            why.append(f"load {load.iloc[i]:.1f} on {int(cpus.iloc[i])} CPUs")
        if noisy[i]:
            why.append(f"step-time CV {100 * step_cv.iloc[i]:.1f}% "
                       f"vs cell median {100 * cell_cv.iloc[i]:.1f}%")
        reasons[i] = "; ".join(why)
    return pd.Series(reasons, index=runs.index, dtype=object)


def disturbed_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """``run_key``, ``case``, ``side``, ``repeat`` and ``reason`` of every disturbed run."""
    reasons = disturbed_reasons(runs)
    flagged = runs.loc[reasons.notna(), ["run_key", "case", "side", "repeat"]].copy()
    flagged["reason"] = reasons[reasons.notna()]
    return flagged.reset_index(drop=True)
