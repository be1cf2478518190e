"""``gc``: remove unused bench worktrees, trim bench logs by age and size (never a running run's),
remove the stale temporary files of this host's dead writers from a results root and the credentials
of embedded clusters whose client died; a dry run only says what it would remove."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from orchestrator.dispatch.cluster_credentials import stale_credentials
from orchestrator.session.recorded import locate_results
from orchestrator.store.parquet import remove_stale_results_temps, stale_results_temps
from orchestrator.worker.log_trim import (
    DEFAULT_MAX_AGE_S,
    DEFAULT_MAX_MIB,
    RunLogs,
    logs_to_trim,
    remove_logs,
)
from orchestrator.worker.worktrees import PrunedTree, WorktreePool, shasweep_home

__all__ = ["DEFAULT_MAX_AGE_S", "DEFAULT_MAX_MIB", "Cleanup", "collect_garbage"]


@dataclass(frozen=True)
class Cleanup:
    """What was removed (``dry_run``: what would be), and from where."""

    dry_run: bool
    worktrees: list[PrunedTree]
    worktree_root: Path
    logs: list[tuple[RunLogs, str]]  # (a run's log directory, why)
    temps: list[Path]
    results_root: Path
    credentials: list[Path]

    @property
    def freed_mib(self) -> float:
        """The run logs' size."""
        return sum(logs.size for logs, _ in self.logs) / 2**20


def collect_garbage(*, max_age_s: float = 0.0, logs_max_age_s: float = DEFAULT_MAX_AGE_S,
                    logs_max_mib: float = DEFAULT_MAX_MIB, results_root: str | Path = "results",
                    dry_run: bool = False, cwd: Path | None = None) -> Cleanup:
    """Remove the worktrees unused for ``max_age_s`` (0: every unused one), the run logs older than
    ``logs_max_age_s`` and then the oldest until they total ``logs_max_mib``, the stale temporary files
    under ``results_root`` and stale cluster credentials; with ``dry_run`` nothing."""
    pool = WorktreePool()
    trees = pool.prune(max_age_s=max_age_s, dry_run=dry_run)
    doomed = logs_to_trim(shasweep_home() / "logs", logs_max_age_s, logs_max_mib)
    root = locate_results(results_root, cwd=cwd)
    temps = stale_results_temps(root) if dry_run else remove_stale_results_temps(root)
    credentials = stale_credentials()
    if not dry_run:
        remove_logs(doomed)
        for path in credentials:
            path.unlink(missing_ok=True)
    return Cleanup(dry_run, trees, pool.root, doomed, temps, root, credentials)
