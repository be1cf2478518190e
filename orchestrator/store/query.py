"""The one read layer of a results root: every reader asks here for runs, steps and run statuses.

A question is a ``Where`` (which runs) and the columns wanted. A question naming its sweeps (up to
``LISTED_SWEEPS``) reads only their partitions; any other question that filters (case, side, SHA,
host, status, copies) asks the index (``store.index``) which files hold matching runs. Either way
only the files that can hold a wanted run are opened, only the columns asked for (and those the
filter needs) are read, and a damaged file is named in one warning and skipped (``store.damaged``).
Readers never learn the file layout: a sweep's runs may be in one file per run or compacted
(``store.compact``)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from orchestrator.spec.results_format import metadata_version
from orchestrator.store import index
from orchestrator.store.damaged import READ_ERRORS, is_readable, read_table_skipping, warn_damaged
from orchestrator.store.migrations import NEEDED_FOR, migrated_runs
from orchestrator.store.partitions import (
    Holdings,
    T,
    holdings,
    is_part,
    partition_dir,
    retrying,
    sweep_partitions,
    versioned_dataset,
)

STEP_COLUMNS: tuple[str, ...] = ("sweep_id", "run_key", "step", "warmup", "phase", "ms")
PARTITION_COLUMN = "sweep"  # what ``pd.read_parquet(root / "runs")`` calls the partition
READ_CHUNK = 16  # files per dataset read: faster, and a fraction of the memory, than all at once
LISTED_SWEEPS = 20  # a question filtering runs of more sweeps than this asks the index for their files


@dataclass(frozen=True)
class Where:
    """Which runs a read wants; every field left None (False) does not restrict."""

    sweeps: Sequence[str] | None = None
    cases: Sequence[str] | None = None
    sides: Sequence[str] | None = None
    shas: Sequence[str] | None = None
    sha_prefix: str | None = None
    hostnames: Sequence[str] | None = None  # host_hostname
    run_keys: Sequence[str] | None = None
    status: str | None = None
    measured: bool = False  # only runs measured in their sweep, not the copies ``store.reuse`` made

    @property
    def filters_rows(self) -> bool:
        """Whether it selects some runs of a partition, not all."""
        return self.expression() is not None and replace(self, sweeps=None).expression() is not None

    @property
    def across_sweeps(self) -> bool:
        """Whether the index answers it: it filters runs without naming their sweeps, or naming more
        than ``LISTED_SWEEPS`` (one index read instead of every partition's listing and parts' footers)."""
        return self.filters_rows and (self.sweeps is None or len(self.sweeps) > LISTED_SWEEPS)

    def expression(self, on_index: bool = False) -> pc.Expression | None:
        """The filter on a runs table (``on_index``: on the index, whose copy column is ``reused``)."""
        terms = [pc.field(column).isin(list(values)) for column, values in (
            ("sweep_id", self.sweeps), ("case", self.cases), ("side", self.sides), ("sha", self.shas),
            ("host_hostname", self.hostnames), ("run_key", self.run_keys)) if values is not None]
        if self.sha_prefix is not None:
            terms.append(pc.starts_with(pc.field("sha"), pattern=self.sha_prefix))
        if self.status is not None:
            terms.append(pc.field("status") == self.status)
        if self.measured:
            terms.append(pc.field("reused") == False if on_index  # noqa: E712 - an expression
                         else pc.field("reused_from").is_null())
        expression = None
        for term in terms:
            expression = term if expression is None else expression & term
        return expression

    @property
    def columns(self) -> list[str]:
        """The runs columns the filter reads."""
        named = [column for column, values in (
            ("sweep_id", self.sweeps), ("case", self.cases), ("side", self.sides), ("sha", self.shas),
            ("host_hostname", self.hostnames), ("run_key", self.run_keys), ("status", self.status))
            if values is not None]
        return named + (["sha"] if self.sha_prefix else []) + (["reused_from"] if self.measured else [])


ALL = Where()
Columns = pa.Schema | Sequence[str] | None


def read_runs(root: str | Path, where: Where = ALL, columns: Columns = None) -> pd.DataFrame:
    """The runs ``where`` selects, one row each. ``columns``: a schema (absent columns read as null
    of its type), names, or None for every column any selected file holds (plus ``sweep``, the
    partition, when no sweep was named, as ``pd.read_parquet(root / "runs")`` gives it)."""
    return select(root, where).table(columns).to_pandas()


def runs_table(root: str | Path, where: Where = ALL, columns: Columns = None) -> pa.Table:
    """``read_runs`` as an Arrow table."""
    return select(root, where).table(columns)


def runs_schema(root: str | Path, where: Where = ALL) -> pa.Schema:
    """Every column (with its type) of the files holding the selected runs (footers only)."""
    return select(root, where).schema()


def select(root: str | Path, where: Where = ALL) -> Selection:
    """The files holding the runs ``where`` selects, found once (partitions and index), to ask for
    their schema and then read them."""
    return Selection(Path(root), where)


class Selection:
    """The runs files a ``Where`` selects; each read lists them again if a compaction replaced one."""

    def __init__(self, root: Path, where: Where) -> None:
        self.root, self.where = root, where
        self._list()

    def schema(self) -> pa.Schema:
        """Every column (with its type) the selected files hold (footers only)."""
        return self._again(lambda: _unified(sorted(self._files))) or pa.schema([])

    def table(self, columns: Columns = None) -> pa.Table:
        """The selected runs as ``read_runs`` describes them."""
        where = self.where
        table = self._again(lambda: _read(self._files, columns, where.expression(),
                                          [pa.field(name, pa.string()) for name in where.columns]))
        if columns is None and where.sweeps is None and "sweep_id" in table.column_names:
            table = table.append_column(PARTITION_COLUMN, table.column("sweep_id"))
        return table

    def _again(self, read: Callable[[], T]) -> T:
        return retrying(read, self._list)

    def _list(self) -> None:
        self._files = retrying(lambda: _runs_files(self.root, self.where))


def read_steps(root: str | Path, where: Where = ALL, phases: Iterable[str] | None = None,
               columns: Sequence[str] = STEP_COLUMNS, warmup: bool | None = None) -> pd.DataFrame:
    """The per-step rows of the selected runs; only ``phases`` (None: all) and, with ``warmup``
    given, only warm-up (True) or measured (False) steps."""
    return steps_table(root, where, phases, columns, warmup).to_pandas()


def steps_table(root: str | Path, where: Where = ALL, phases: Iterable[str] | None = None,
                columns: Sequence[str] = STEP_COLUMNS, warmup: bool | None = None) -> pa.Table:
    """``read_steps`` as an Arrow table."""
    def read() -> pa.Table:
        wanted = _selected_keys(root, where)
        files: dict[Path, list[str] | None] = {}
        for sweep_id, keys in wanted.items():
            files |= _steps_files(root, sweep_id, keys)
        expression = None if phases is None else pc.field("phase").isin(list(phases))
        if warmup is not None:
            term = pc.field("warmup") == warmup
            expression = term if expression is None else expression & term
        schema = pa.schema([(name, _STEP_TYPES[name]) for name in columns])
        return _read(files, schema, expression, [pa.field(n, _STEP_TYPES[n]) for n in ("phase", "warmup")])

    return retrying(read)


def run_statuses(root: str | Path, sweep_id: str) -> dict[str, str | None]:
    """``run_key -> status`` of every run recorded in one sweep; None when its runs row or its steps
    cannot be read (``--resume`` runs it again, which rewrites both). The cases read from one suite
    run count under the suite run's key: ok when every one of them is."""
    def read() -> dict[str, str | None]:
        runs, steps = holdings(root, "runs", sweep_id), holdings(root, "steps", sweep_id)
        statuses: dict[str, str | None] = {}
        for path, keys in runs.files.items():
            statuses |= _part_statuses(path, keys) if is_part(path) else {path.stem: _single_status(path)}
        for key in _keys_without_steps(runs, steps):
            if key in statuses:
                statuses[key] = None
        return statuses

    folded: dict[str, str | None] = {}
    parents = suite_runs_of(root, sweep_id)
    for key, status in retrying(read).items():
        unit = parents.get(key, key)
        folded[unit] = status if folded.get(unit, "ok") == "ok" else folded[unit]
    return folded


def suite_runs_of(root: str | Path, sweep_id: str) -> dict[str, str]:
    """``case run key -> suite run key`` of the cases one sweep's suite runs were read into."""
    where = Where(sweeps=[sweep_id])
    if "suite_run_key" not in runs_schema(root, where).names:
        return {}
    table = runs_table(root, where, ["run_key", "suite_run_key"])
    return {key: suite for key, suite in zip(table.column("run_key").to_pylist(),
                                             table.column("suite_run_key").to_pylist(), strict=True) if suite}


def with_suite_cases(root: str | Path, sweep_id: str, run_keys: Iterable[str]) -> list[str]:
    """``run_keys`` and the keys of the cases read from those of them that are suite runs."""
    keys = list(run_keys)
    wanted = set(keys)
    return keys + [case for case, suite in suite_runs_of(root, sweep_id).items() if suite in wanted]


def _single_status(path: Path) -> str | None:
    """The status in a one-run file (named by its key); None (warned) when it cannot be read."""
    try:
        table = pq.read_table(path, columns=["status"])
        metadata_version(table.schema.metadata, str(path))
        return table.column("status")[0].as_py()
    except FileNotFoundError:
        raise
    except (*READ_ERRORS, IndexError, KeyError) as exc:
        warn_damaged(path, exc)
        return None


def _part_statuses(path: Path, keys: list[str]) -> dict[str, str | None]:
    """The statuses of ``keys`` in a compacted file; all None (warned) when it cannot be read."""
    table = read_table_skipping([path], _dataset_reader(
        pa.schema([("run_key", pa.string()), ("status", pa.string())]), ["run_key", "status"],
        pc.field("run_key").isin(keys)))
    found = {} if table is None else dict(zip(*(table.column(c).to_pylist() for c in ("run_key", "status")),
                                               strict=True))
    return {key: found.get(key) for key in keys}


def check_files(root: str | Path, sweep_id: str) -> list[Path]:
    """The damaged files of one sweep's runs and steps (each named in a warning)."""
    def check() -> list[Path]:
        held = [holdings(root, kind, sweep_id) for kind in ("runs", "steps")]
        return [path for h in held for path in [*h.damaged, *(p for p in h.files if not is_readable(p))]]

    return retrying(check)


def lookup(root: str | Path, where: Where = ALL,
           columns: Sequence[str] = index.INDEX_COLUMNS) -> pd.DataFrame:
    """The index rows (``columns`` of ``store.index.INDEX_SCHEMA``) of the runs ``where`` selects:
    "earlier sweeps of this SHA, case and host" without opening a data file."""
    expression = pc.field("run_key").is_valid()
    if where.expression(on_index=True) is not None:
        expression = expression & where.expression(on_index=True)
    return index.current(root, where.sweeps, expression, list(columns)).to_pandas()


def damaged_files(root: str | Path) -> list[tuple[str, str]]:
    """(sweep id, file name) of every runs file the index found unreadable, sorted."""
    table = index.current(root, None, pc.field("status") == index.DAMAGED, ["sweep_id", "file", "status"])
    return sorted(set(_damaged_rows(table)))


_STEP_TYPES: dict[str, pa.DataType] = {"sweep_id": pa.string(), "run_key": pa.string(), "step": pa.int64(),
                                       "warmup": pa.bool_(), "phase": pa.string(), "ms": pa.float64()}


def _runs_files(root: str | Path, where: Where) -> dict[Path, list[str] | None]:
    """Each runs file that may hold a selected run, with the keys to read from it (None: every row)."""
    if where.across_sweeps:
        return _indexed_files(root, where)
    sweeps = where.sweeps if where.sweeps is not None else sorted(sweep_partitions(root))
    files: dict[Path, list[str] | None] = {}
    for sweep_id in sweeps:
        files |= holdings(root, "runs", sweep_id).selection()
    return files


def _indexed_files(root: str | Path, where: Where) -> dict[Path, list[str] | None]:
    """The files the index says hold runs ``where`` selects; the damaged ones it knows are named."""
    damaged = pc.field("status") == index.DAMAGED
    wanted = where.expression(on_index=True) & pc.field("run_key").is_valid()
    table = index.current(root, where.sweeps, wanted | damaged, ["sweep_id", "file", "run_key", "status"])
    for sweep_id, name in _damaged_rows(table):
        warn_damaged(partition_dir(root, "runs", sweep_id) / name, "unreadable when it was indexed")
    table = table.filter(pc.field("run_key").is_valid())
    files: dict[Path, list[str] | None] = defaultdict(list)
    for sweep_id, name, key in zip(*(table.column(c).to_pylist() for c in ("sweep_id", "file", "run_key")),
                                   strict=True):
        files[partition_dir(root, "runs", sweep_id) / name].append(key)
    return {path: keys if is_part(path) else None for path, keys in files.items()}  # a part may shadow


def _damaged_rows(table: pa.Table) -> list[tuple[str, str]]:
    rows = table.filter(pc.field("status") == index.DAMAGED).select(["sweep_id", "file"])
    return list(zip(*(rows.column(c).to_pylist() for c in ("sweep_id", "file")), strict=True))


def _selected_keys(root: str | Path, where: Where) -> dict[str, set[str] | None]:
    """sweep id -> the keys of its selected runs (None: all of them)."""
    if not where.filters_rows:
        sweeps = where.sweeps if where.sweeps is not None else sorted(sweep_partitions(root))
        return dict.fromkeys(sweeps)
    table = runs_table(root, where, ["sweep_id", "run_key"])
    wanted: dict[str, set[str] | None] = defaultdict(set)
    for sweep_id, key in zip(*(table.column(c).to_pylist() for c in ("sweep_id", "run_key")), strict=True):
        wanted[sweep_id].add(key)
    return dict(wanted)


def _steps_files(root: str | Path, sweep_id: str, keys: set[str] | None) -> dict[Path, list[str] | None]:
    """The steps files of one sweep holding ``keys`` (None: all), with the keys to read from each."""
    held = holdings(root, "steps", sweep_id)
    files: dict[Path, list[str] | None] = {}
    for path, held_keys in held.files.items():
        chosen = held_keys if keys is None else [key for key in held_keys if key in keys]
        if chosen:
            whole = len(chosen) == len(held_keys) and path not in held.partial
            files[path] = None if whole else chosen
    return files


def _keys_without_steps(runs: Holdings, steps: Holdings) -> set[str]:
    """Runs whose steps sit in a damaged file: a single-run steps file by its name (its footer is
    checked), a part by the runs part of the same compaction."""
    lost = {path.stem for path in steps.files if not is_part(path) and not is_readable(path)}
    damaged_parts = {path.name for path in steps.damaged}
    for path, keys in runs.files.items():
        if is_part(path) and path.name in damaged_parts:
            lost |= set(keys)
    return lost


def _read(files: dict[Path, list[str] | None], columns: Columns = None,
          expression: pc.Expression | None = None, filter_fields: Sequence[pa.Field] = ()) -> pa.Table:
    """The rows of ``files`` (each: the keys to read from it, None for all) matching ``expression``,
    as one table of ``columns``, older rows migrated to today's shape (``store.migrations``); damaged
    files are skipped with a warning. Files are read
    ``READ_CHUNK`` at a time: a dataset keeps every file's parsed footer until it is done."""
    paths = sorted(files)
    schema = _schema_of(paths, columns)
    needed = [pa.field(NEEDED_FOR[name], pa.string()) for name in schema.names
              if name in NEEDED_FOR and NEEDED_FOR[name] not in schema.names]  # to migrate older rows
    scan = _with_fields(schema, [*filter_fields, *needed])
    names = [*schema.names, *(field.name for field in needed)]
    tables = []
    for start in range(0, len(paths), READ_CHUNK):
        chunk = paths[start:start + READ_CHUNK]
        whole = [path for path in chunk if files[path] is None]
        partial = [path for path in chunk if files[path] is not None]
        for group, keys in ((whole, None), (partial, [key for path in partial for key in files[path]])):
            condition = expression
            if keys is not None:
                term = pc.field("run_key").isin(keys)
                condition = term if condition is None else condition & term
            table = read_table_skipping(group, _dataset_reader(scan, names, condition))
            if table is not None and table.num_rows:
                tables.append(table)
    if not tables:
        return schema.empty_table()
    table = pa.concat_tables(tables, promote_options="permissive") if len(tables) > 1 else tables[0]
    return migrated_runs(table).select(schema.names)


def _dataset_reader(schema: pa.Schema, names: list[str], condition: pc.Expression | None
                    ) -> Callable[[list[Path]], pa.Table]:
    def read(paths: list[Path]) -> pa.Table:
        return versioned_dataset(paths, schema).to_table(columns=names, filter=condition)
    return read


def _schema_of(paths: list[Path], columns: Columns) -> pa.Schema:
    """The schema to read: as given, or the files' own types of the named (or all) columns."""
    if isinstance(columns, pa.Schema):
        return columns
    unified = _unified(paths) or pa.schema([])
    if columns is None:
        return unified
    return pa.schema([unified.field(name) if name in unified.names else pa.field(name, pa.string())
                      for name in columns])


def _unified(paths: list[Path]) -> pa.Schema | None:
    """The union of the files' schemas (footers only; damaged files named and left out)."""
    schemas = []
    for path in paths:
        try:
            schema = pq.read_schema(path)
            metadata_version(schema.metadata, str(path))
            schemas.append(schema)
        except FileNotFoundError:
            raise
        except READ_ERRORS as exc:
            warn_damaged(path, exc)
    return pa.unify_schemas(schemas, promote_options="permissive") if schemas else None


def _with_fields(schema: pa.Schema, fields: Sequence[pa.Field]) -> pa.Schema:
    """``schema`` plus those of ``fields`` (the columns a filter reads) it lacks."""
    names = set(schema.names)
    missing = {field.name: field for field in fields if field.name not in names}
    return pa.schema([*schema, *missing.values()])
