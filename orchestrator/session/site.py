"""``shasweep site``: the results site, a static HTML site of every case across the sweeps of a results
root (``analysis.site_model``, rendered by ``render.site_pages``), written to a directory outside the
root that opens from disk, from any static host and on the scheduler's ``/shasweep/history``.

A build is incremental: the state the last one left in the site's directory (``store.site_state``)
holds every sweep's mark, runs and gate rows, so only the sweeps whose runs partition, record or
``verdicts.json`` changed are read again, and only the pages of the cases they touched (and of those
sweeps) are rendered again; a page whose text did not change is not rewritten. The index, the list of
sweeps and the shared files are checked every time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pyarrow as pa
from filelock import FileLock

from orchestrator.analysis.site_model import IndexRow
from orchestrator.analysis.site_runs import GATE_COLUMNS, gate_schema, series_schema
from orchestrator.analysis.site_sweeps import SweepInfo
from orchestrator.errors import InvalidInputError
from orchestrator.plan.roots import check_results_root
from orchestrator.session.recorded import locate_results
from orchestrator.session.site_reading import SweepsRead, bisect_infos, read_sweeps, sweep_records
from orchestrator.session.site_writing import SiteChanges, SitePages
from orchestrator.store import query
from orchestrator.store.atomic import write_text_unsynced
from orchestrator.store.records import creation_order, stored_sequence, sweeps_dir
from orchestrator.store.site_state import (
    SiteState,
    load_site_state,
    save_site_state,
    state_dir,
    sweep_marks,
)

LOCK_TIMEOUT_S = 600.0  # another build of the same site (the board's, a CI job's) is awaited this long


@dataclass(frozen=True)
class SiteBuild:
    """What a build did: where the site is, the pages it wrote (paths under ``out``) and how many it
    left as they were, the sweeps it read, and the damaged results it named."""

    out: Path
    written: list[str] = field(default_factory=list)
    unchanged: int = 0
    read: int = 0
    damaged: list[str] = field(default_factory=list)

    @property
    def index(self) -> Path:
        return self.out / "index.html"


def default_site_dir(results_root: Path) -> Path:
    """Where a site goes by default: beside the results root, ``<root>-site``."""
    return results_root.with_name(results_root.name + "-site")


def build_site(results_root: str | Path = "results", out: str | Path | None = None, *,
               cwd: Path | None = None) -> SiteBuild:
    """Build (or bring up to date) the site of ``results_root`` (``session.recorded.locate_results``)
    in ``out`` (relative to ``cwd``; default ``default_site_dir``). ``InvalidInputError`` (exit 2):
    no results root there, ``out`` inside it, or ``out`` not a writable directory."""
    root = locate_results(results_root, cwd=cwd)
    if not root.is_dir():
        raise InvalidInputError(f"no results root at {root}", "--results")
    target = site_directory(root, out, cwd or Path.cwd())
    with FileLock(state_dir(target) / ".lock", timeout=LOCK_TIMEOUT_S):
        return _build(root, target)


def site_directory(root: Path, out: str | Path | None, cwd: Path) -> Path:
    """``out`` made absolute, checked to lie outside ``root`` and to be a writable directory (made)."""
    target = default_site_dir(root) if out is None else (cwd / out)
    target = Path(target).resolve()
    if target == root or target.is_relative_to(root):
        raise InvalidInputError(f"--out {target} is inside the results root {root}: the site goes "
                                "outside it (its default is beside it, <root>-site)", "--out")
    if root.is_relative_to(target):
        raise InvalidInputError(f"--out {target} holds the results root {root}: choose a directory of "
                                "its own", "--out")
    check_results_root(target, "--out")
    try:
        state_dir(target).mkdir(parents=True, exist_ok=True)
        write_text_unsynced(state_dir(target) / ".probe", "")
    except OSError as exc:
        raise InvalidInputError(f"--out {target} is not a writable directory: {exc}", "--out") from None
    return target


def _build(root: Path, out: Path) -> SiteBuild:
    state = _kept_state(out, root)
    marks = sweep_marks(root)
    changed = [s for s in marks if marks[s] is None or state.sweeps.get(s, {}).get("mark") != marks[s]]
    gone = [s for s in state.sweeps if s not in marks]
    known, unreadable = sweep_records(root, changed)
    infos = {s: SweepInfo.from_json(entry["info"]) for s, entry in state.sweeps.items() if s in marks}
    infos |= {s: SweepInfo.of_record(r) for s, r in known.items()}
    infos |= {s: SweepInfo(s) for s in changed if s not in known}
    metrics = site_metrics(infos.values())
    if not set(metrics) <= set(state.metrics):  # a metric the kept rows lack: read every sweep again
        changed = sorted(marks)
        state = SiteState(str(root), [], pages=state.pages, copies=state.copies)
        known, unreadable = sweep_records(root, changed)
    read = read_sweeps(root, changed, metrics, known)
    series, gates, touched = _merged(state, read, metrics, set(changed) | set(gone))
    unreadable = {**_kept_unreadable(state, marks), **unreadable}
    damaged = [f"sweep {s}: file {f} unreadable" for s, f in query.damaged_files(root)]
    damaged += [f"sweep {s}: record unreadable ({why})" for s, why in sorted(unreadable.items())]
    bisects = bisect_infos(root)
    changes = _changes(state, bisects, damaged, set(changed), touched, bool(changed or gone))
    pages = SitePages(out, root, state)
    pages.write_all(series, gates, infos, _newest_first(root, list(marks)), bisects, damaged, changes)
    state.metrics, state.bisects, state.damaged = metrics, [b.to_json() for b in bisects], damaged
    state.series = pa.Table.from_pandas(series, series_schema(metrics), preserve_index=False)
    state.gates = pa.Table.from_pandas(gates, gate_schema(), preserve_index=False)
    state.sweeps = {s: {"mark": marks[s], "info": infos[s].to_json(),
                        **({"unreadable": unreadable[s]} if s in unreadable else {})} for s in marks}
    save_site_state(out, state)
    return SiteBuild(out, pages.written, pages.unchanged, len(changed), damaged)


def _kept_state(out: Path, root: Path) -> SiteState:
    """The last build's state of ``root``'s site in ``out``, or an empty one (a full build) where there is
    none, it is of another root, or what it kept does not read back: a sweep's info or an index row
    that does not parse, a table without the columns and types of its schema."""
    state = load_site_state(out)
    if state is None or state.root != str(root):
        return SiteState(str(root), [])
    try:
        for entry in state.sweeps.values():
            SweepInfo.from_json(entry["info"])
        for row in (row for rows in state.rows.values() for row in rows):
            IndexRow.from_json(row)
        for name, schema in (("series", series_schema(state.metrics)), ("gates", gate_schema())):
            table = getattr(state, name)
            if table is not None:
                setattr(state, name, table.select(schema.names).cast(schema))
    except (KeyError, TypeError, ValueError, pa.ArrowException):
        return SiteState(str(root), [])
    return state


def _changes(state: SiteState, bisects: list, damaged: list[str], changed: set[str], touched: set[str],
             sweeps_changed: bool) -> SiteChanges:
    """What the pages must show anew: the sweeps read again, the cases they touched, and the cases and
    step sweeps of every bisect that is new, gone or changed."""
    shown = [b.to_json() for b in bisects]
    moved = [b for b in [*shown, *state.bisects] if (b in shown) != (b in state.bisects)]
    cases = touched | {b["case"] for b in moved if b["case"]}
    sweeps = changed | {s for b in moved for s in b["steps"]}
    return SiteChanges(sweeps, cases, sweeps_changed or bool(moved) or damaged != state.damaged)


def site_metrics(infos: object) -> list[str]:
    """Every metric the site keeps per run: those any gate reads, the throughput and a suite's time."""
    from orchestrator.analysis.site_model import DEFAULT_METRICS

    gated = [m for info in infos for m in info.gate_metrics]  # type: ignore[attr-defined]
    return sorted(set(gated) | set(DEFAULT_METRICS))


def _merged(state: SiteState, read: SweepsRead, metrics: list[str], replaced: set[str]
            ) -> tuple[pd.DataFrame, pd.DataFrame, set[str]]:
    """The kept rows of the sweeps not ``replaced`` and the rows just read; the cases touched (those the
    replaced sweeps had and have)."""
    old_series = _frame(state.series, series_schema(metrics))
    old_gates = _frame(state.gates, gate_schema())
    dropped = old_series["sweep_id"].isin(replaced)
    touched = set(old_series.loc[dropped, "case"])
    series = pd.concat([old_series[~dropped], *read.series], ignore_index=True)
    touched |= {c for frame in read.series for c in frame["case"].dropna()}
    new_gates = pd.DataFrame(read.gates, columns=list(GATE_COLUMNS))
    gates = pd.concat([g for g in (old_gates[~old_gates["sweep_id"].isin(replaced)], new_gates) if len(g)]
                      or [old_gates.iloc[:0]], ignore_index=True)
    return series, gates, touched


def _frame(table: pa.Table | None, schema: pa.Schema) -> pd.DataFrame:
    """``table`` (a kept one, or None) as a frame of ``schema``'s columns."""
    if table is None or any(name not in table.column_names for name in schema.names):
        return schema.empty_table().to_pandas()
    return table.select(schema.names).to_pandas()


def _kept_unreadable(state: SiteState, marks: dict) -> dict[str, str]:
    """The unreadable records the last build found, of sweeps it need not read again."""
    return {s: e["unreadable"] for s, e in state.sweeps.items()
            if "unreadable" in e and s in marks and marks[s] == e.get("mark")}


def _newest_first(root: Path, sweep_ids: list[str]) -> list[str]:
    """``sweep_ids`` by creation, the newest first (``store.records.creation_order``)."""
    directory = sweeps_dir(root)
    return sorted(sweep_ids, key=lambda s: creation_order(s, stored_sequence(directory / f"{s}.json")),
                  reverse=True)
