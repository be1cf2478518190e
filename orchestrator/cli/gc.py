"""``shasweep gc``: remove unused bench worktrees and prune git's worktree metadata."""


from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass



def add_gc_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--max-age-s", type=float, default=0.0, metavar="SECONDS",
                        help="remove only worktrees unused for this long (default 0: every unused one)")


def cmd_gc(args: argparse.Namespace) -> int:
    """Remove unused bench worktrees and prune git's worktree metadata."""
    from orchestrator.worker.worktrees import WorktreePool

    pool = WorktreePool()
    removed = pool.prune(max_age_s=args.max_age_s)
    for tree in removed:
        print(f"removed {tree.path} ({tree.repo} @ {tree.sha[:12]})")
    print(f"{len(removed)} worktree(s) removed under {pool.root}")
    return 0
