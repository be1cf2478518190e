"""``shasweep compact`` and ``shasweep index``: arguments in, ``session.compaction`` merges finished
sweeps' per-run files or brings the results index up to date, what it did printed."""

from __future__ import annotations

import argparse

from orchestrator.session.compaction import SweepCompaction, compact_sweeps, update_index


def add_compact_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("sweep_ids", nargs="*", metavar="SWEEP_ID|latest", help="the sweeps to compact")
    parser.add_argument("--all", action="store_true",
                        help="every sweep of the results root not being run (upgrades a root of per-run "
                             "files)")
    _results_argument(parser)


def add_index_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rebuild", action="store_true",
                        help="index every sweep from its files, replacing the index (default: update "
                             "the sweeps whose files changed)")
    _results_argument(parser)


def cmd_compact(args: argparse.Namespace) -> int:
    """Compact the named sweeps (or all); exit 3 when a damaged file keeps one from compacting."""
    done = compact_sweeps(args.sweep_ids, every=args.all, results_root=args.results, on_sweep=_said)
    before, after = done.files
    print(f"{len(done.sweeps)} sweep(s) looked at under {done.results_root}: {before} files -> {after}")
    return done.exit_code


def _said(sweep: SweepCompaction) -> None:
    """One line on a sweep just looked at (none when it had nothing to compact)."""
    done = sweep.done
    if sweep.skipped is not None:
        print(f"skipped {sweep.sweep_id}: {sweep.skipped}")
    elif done is not None and done.blocked:
        print(f"not compacted {sweep.sweep_id}: {done.blocked}")
    elif done is not None:
        dropped = f"; damaged files moved to {sweep.damaged_dir}: " + ", ".join(
            p.name for p in done.dropped) if done.dropped else ""
        print(f"compacted {sweep.sweep_id}: {done.runs} runs, {done.files_before} files -> "
              f"{done.files_after}{dropped}")


def cmd_index(args: argparse.Namespace) -> int:
    """Rebuild the index, or bring it up to date, and say what it holds."""
    held = update_index(rebuild=args.rebuild, results_root=args.results)
    print(f"index of {held.results_root}: {held.runs} runs of {held.sweeps} sweeps ({held.path})")
    return 0


def _results_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--results", default="results", metavar="DIR",
                        help="results root (default: 'results' in the git repo of the current directory)")
