"""``shasweep gc``: arguments in, ``session.housekeeping`` removes unused bench worktrees, old or excess bench
logs, stale temporary results files and dead clusters' credentials (``--dry-run``: nothing), each
printed."""

from __future__ import annotations

import argparse

from orchestrator.session.housekeeping import DEFAULT_MAX_AGE_S, DEFAULT_MAX_MIB, collect_garbage


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
    done = collect_garbage(max_age_s=args.max_age_s, logs_max_age_s=args.logs_max_age_s,
                           logs_max_mib=args.logs_max_mib, results_root=args.results, dry_run=args.dry_run)
    verb = "would remove" if done.dry_run else "removed"
    for tree in done.worktrees:
        print(f"{verb} {tree.path} ({tree.repo} @ {tree.sha[:12]})")
    for logs, why in done.logs:
        print(f"{verb} {logs.path} ({logs.size / 2**20:.1f} MiB, {why})")
    for temp in done.temps:
        print(f"{verb} {temp} (temporary file of a writer that is gone)")
    for path in done.credentials:
        print(f"{verb} {path} (credentials of an embedded cluster whose client is gone)")
    print(f"{len(done.worktrees)} worktree(s) {verb} under {done.worktree_root}; {len(done.logs)} run log "
          f"dir(s) {verb} ({done.freed_mib:.1f} MiB); {len(done.temps)} stale temporary file(s) {verb} "
          f"under {done.results_root}")
    return 0
