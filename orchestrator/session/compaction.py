"""``compact`` (merge finished sweeps' per-run files into one runs and one steps file each,
``store.compact``) and ``index`` (bring the results index up to date or rebuild it, ``store.index``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from orchestrator.errors import EXIT_OK, EXIT_RUN_FAILED, InvalidInputError
from orchestrator.session.recorded import locate_results
from orchestrator.store import compact, index, records
from orchestrator.store.compact import DAMAGED_DIR, Compacted
from orchestrator.store.partitions import sweep_partitions


@dataclass(frozen=True)
class SweepCompaction:
    """One sweep looked at: what ``store.compact`` did (None: nothing to do, or skipped), why it was
    skipped (being run: its client compacts it when it ends), where damaged files go."""

    sweep_id: str
    done: Compacted | None
    skipped: str | None
    damaged_dir: Path


@dataclass(frozen=True)
class Compaction:
    """Every sweep ``compact_sweeps`` looked at under ``results_root``."""

    results_root: Path
    sweeps: list[SweepCompaction]

    @property
    def exit_code(self) -> int:
        """3 when a damaged file kept a sweep from compacting, else 0."""
        return EXIT_RUN_FAILED if any(s.done and s.done.blocked for s in self.sweeps) else EXIT_OK

    @property
    def files(self) -> tuple[int, int]:
        """The files of the compacted sweeps before and after."""
        done = [s.done for s in self.sweeps if s.done is not None and not s.done.blocked]
        return sum(c.files_before for c in done), sum(c.files_after for c in done)


@dataclass(frozen=True)
class IndexSummary:
    """The index of ``results_root`` (``path``): its runs and sweeps."""

    results_root: Path
    path: Path
    runs: int
    sweeps: int


def compact_sweeps(sweep_ids: Sequence[str] = (), *, every: bool = False,
                   results_root: str | Path = "results", cwd: Path | None = None,
                   on_sweep: Callable[[SweepCompaction], None] | None = None) -> Compaction:
    """Compact ``sweep_ids`` (``latest`` allowed), or with ``every`` each sweep not being run; then fold
    the index. ``on_sweep`` is told of each sweep once it was looked at."""
    root = _existing_root(results_root, cwd)
    if bool(sweep_ids) == every:
        raise InvalidInputError("name the sweeps to compact, or give --all")
    if every:
        wanted = sorted(sweep_partitions(root))
    else:
        wanted = [records.resolve_sweep_id(root, sweep_id) for sweep_id in sweep_ids]
        for sweep_id in wanted:
            if sweep_id not in sweep_partitions(root):
                raise InvalidInputError(f"sweep {sweep_id!r} has no runs under {root / 'runs'}")
    looked: list[SweepCompaction] = []
    for sweep_id in wanted:
        done, skipped = None, None
        try:
            with records.sweep_lock(root, sweep_id, doing="compact"):
                if compact.needs_compaction(root, sweep_id):
                    done = compact.compact_sweep(root, sweep_id)
        except InvalidInputError as exc:  # being run (its client compacts it when it ends) or compacted
            if not every:
                raise
            skipped = str(exc)
        looked.append(SweepCompaction(sweep_id, done, skipped, root / DAMAGED_DIR))
        if on_sweep is not None:
            on_sweep(looked[-1])
    index.fold(root)
    return Compaction(root, looked)


def update_index(*, rebuild: bool = False, results_root: str | Path = "results",
                 cwd: Path | None = None) -> IndexSummary:
    """Bring the index of ``results_root`` up to date (``rebuild``: index every sweep from its files,
    replacing it); what it holds."""
    root = _existing_root(results_root, cwd)
    if rebuild:
        table = index.rebuild(root)
    else:
        table = index.current(root, columns=["sweep_id", "run_key"])
        index.fold(root)
    runs = table.filter(table.column("run_key").is_valid())
    return IndexSummary(root, index.index_dir(root) / "runs.parquet", runs.num_rows,
                        len(set(table.column("sweep_id").to_pylist())))


def _existing_root(results_root: str | Path, cwd: Path | None) -> Path:
    root = locate_results(results_root, cwd=cwd)
    if not (root / "runs").is_dir():
        raise InvalidInputError(f"no runs recorded under {root}", "--results")
    return root
