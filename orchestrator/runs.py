"""The unit of work between planning (client side) and execution (bench worker side).

``PlannedRun`` is everything the worker needs to run one bench process; it crosses the Dask
boundary by pickling, so it holds only plain data.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

STATUSES: tuple[str, ...] = ("ok", "failed", "timeout", "cancelled")


@dataclass(frozen=True)
class PlannedRun:
    """One bench invocation: a case on one side's SHA, one repeat."""

    sweep_id: str
    run_key: str  # deterministic: hash of sweep id, side, case, repeat, sha, params
    order: int  # position in the plan, 0-based
    side: str
    ref: str  # as written in the sweep
    sha: str  # the full SHA the ref resolved to
    case: str  # "algo/task/sim"
    algo: str
    task: str
    sim: str
    variant: str
    repeat: int
    repo: str  # absolute path of the git repository the SHA lives in
    argv_template: tuple[str, ...]  # placeholders: see orchestrator.spec.PLACEHOLDERS
    params: dict = field(default_factory=dict)  # num_envs, warmup, measure, replay_capacity, seed, threads
    env: dict = field(default_factory=dict)  # extra environment variables for the bench process
    timeout_s: float = 600.0
    results_root: str = "results"

    def to_dict(self) -> dict:
        """Plain-dict form (for JSON and Parquet columns)."""
        return asdict(self)
