"""``shasweep compact`` (merge finished sweeps' per-run files, ``store.compact``) and ``shasweep index``
(bring the results index up to date or rebuild it, ``store.index``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from orchestrator.errors import EXIT_OK, EXIT_RUN_FAILED, InvalidInputError
from orchestrator.plan.expand import results_root_for
from orchestrator.store import compact, index
from orchestrator.store import records as sweep_record
from orchestrator.store.partitions import sweep_partitions


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
    root = _existing_root(args)
    if bool(args.sweep_ids) == args.all:
        raise InvalidInputError("name the sweeps to compact, or give --all")
    if args.all:
        sweep_ids = sorted(sweep_partitions(root))
    else:
        sweep_ids = [sweep_record.resolve_sweep_id(root, sweep_id) for sweep_id in args.sweep_ids]
        for sweep_id in sweep_ids:
            if sweep_id not in sweep_partitions(root):
                raise InvalidInputError(f"sweep {sweep_id!r} has no runs under {root / 'runs'}")
    code, before, after = EXIT_OK, 0, 0
    for sweep_id in sweep_ids:
        try:
            with sweep_record.sweep_lock(root, sweep_id):
                if not compact.needs_compaction(root, sweep_id):
                    continue
                outcome = compact.compact_sweep(root, sweep_id)
        except InvalidInputError as exc:  # being run: its client compacts it when it ends
            if not args.all:
                raise
            print(f"skipped {sweep_id}: {exc}")
            continue
        if outcome.blocked:
            print(f"not compacted {sweep_id}: {outcome.blocked}")
            code = EXIT_RUN_FAILED
            continue
        before, after = before + outcome.files_before, after + outcome.files_after
        dropped = f"; damaged files moved to {root / compact.DAMAGED_DIR}: " + ", ".join(
            p.name for p in outcome.dropped) if outcome.dropped else ""
        print(f"compacted {sweep_id}: {outcome.runs} runs, {outcome.files_before} files -> "
              f"{outcome.files_after}{dropped}")
    index.fold(root)
    print(f"{len(sweep_ids)} sweep(s) looked at under {root}: {before} files -> {after}")
    return code


def cmd_index(args: argparse.Namespace) -> int:
    """Rebuild the index, or bring it up to date, and say what it holds."""
    root = _existing_root(args)
    if args.rebuild:
        table = index.rebuild(root)
    else:
        table = index.current(root, columns=["sweep_id", "run_key"])
        index.fold(root)
    runs = table.filter(table.column("run_key").is_valid())
    print(f"index of {root}: {runs.num_rows} runs of {len(set(table.column('sweep_id').to_pylist()))} sweeps "
          f"({index.index_dir(root) / 'runs.parquet'})")
    return EXIT_OK


def _existing_root(args: argparse.Namespace) -> Path:
    root = results_root_for(args.results, Path.cwd())
    if not (root / "runs").is_dir():
        raise InvalidInputError(f"no runs recorded under {root}", "--results")
    return root


def _results_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--results", default="results", metavar="DIR",
                        help="results root (default: 'results' in the git repo of the current directory)")
