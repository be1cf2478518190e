"""``shasweep gc``: remove unused bench worktrees, trim bench logs by age and size, remove the stale
temporary files of dead writers from a results root; ``--dry-run`` only says what it would remove."""

from __future__ import annotations

import argparse
from pathlib import Path

from orchestrator.plan.roots import results_root_for
from orchestrator.store.parquet import remove_stale_results_temps, stale_results_temps
from orchestrator.worker.log_trim import DEFAULT_MAX_AGE_S, DEFAULT_MAX_MIB, logs_to_trim, remove_logs
from orchestrator.worker.worktrees import WorktreePool, shasweep_home


def add_gc_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--max-age-s", type=float, default=0.0, metavar="SECONDS",
                        help="remove only worktrees unused for this long (default 0: every unused one)")
    parser.add_argument("--logs-max-age-s", type=float, default=DEFAULT_MAX_AGE_S, metavar="SECONDS",
                        help=f"remove bench logs older than this (default {DEFAULT_MAX_AGE_S:.0f}: 14 days)")
    parser.add_argument("--logs-max-mib", type=float, default=DEFAULT_MAX_MIB, metavar="MIB",
                        help="then remove the oldest bench logs until they total at most this "
                             f"(default {DEFAULT_MAX_MIB:.0f})")
    parser.add_argument("--results", default="results", metavar="DIR",
                        help="results root to clear of stale temporary files (default: 'results' in the git "
                             "repo of the current directory; skipped if it does not exist)")
    parser.add_argument("--dry-run", action="store_true", help="print what would be removed, remove nothing")


def cmd_gc(args: argparse.Namespace) -> int:
    """Remove unused worktrees, old or excess bench logs and stale temporary results files."""
    verb = "would remove" if args.dry_run else "removed"
    pool = WorktreePool()
    trees = pool.prune(max_age_s=args.max_age_s, dry_run=args.dry_run)
    for tree in trees:
        print(f"{verb} {tree.path} ({tree.repo} @ {tree.sha[:12]})")
    doomed = logs_to_trim(shasweep_home() / "logs", args.logs_max_age_s, args.logs_max_mib)
    for logs, why in doomed:
        print(f"{verb} {logs.path} ({logs.size / 2**20:.1f} MiB, {why})")
    root = results_root_for(args.results, Path.cwd())
    temps = stale_results_temps(root) if args.dry_run else remove_stale_results_temps(root)
    for temp in temps:
        print(f"{verb} {temp} (temporary file of a writer that is gone)")
    if not args.dry_run:
        remove_logs(doomed)
    freed = sum(logs.size for logs, _ in doomed) / 2**20
    print(f"{len(trees)} worktree(s) {verb} under {pool.root}; {len(doomed)} run log dir(s) {verb} "
          f"({freed:.1f} MiB); {len(temps)} stale temporary file(s) {verb} under {root}")
    return 0
