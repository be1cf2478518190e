"""The results site's memory between builds, kept beside its pages (``<out>/.shasweep-site/``), and
the marks that tell which sweeps of a results root changed since.

A sweep's mark is the fingerprint of what the site reads of it: its runs partition directory (inode
and mtime: a run written or a compaction changes them), its record (size and mtime: a waiver, a
status) and its report's ``verdicts.json`` (size and mtime). A mark taken within ``RACY_S`` of a
modification is not kept (``None``: the sweep is read again next time), since a file system's
timestamps may be too coarse to see a second change in that time. The state is a cache: a missing,
damaged or foreign one means a full build, never an error. It is read from disk, so it is used only
when it has the shape this module writes and every page and copy it names is a file under the site's
directory (a build removes the pages and copies it no longer has: an edited state must not make it
remove anything else).
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from orchestrator.store.atomic import write_text_unsynced, write_with
from orchestrator.store.damaged import READ_ERRORS
from orchestrator.store.partitions import sweep_partitions
from orchestrator.store.records import sweeps_dir

STATE_DIR = ".shasweep-site"
FORMAT = 1
RACY_S = 2.0
VERDICTS_SUFFIX = ".verdicts.json"
# a page or copy of the site: a file name, or a directory and a file name, of safe characters, never a
# name of dots only (``render.site_paths`` names every file so)
_SITE_FILE = re.compile(r"(?:[A-Za-z0-9_-][A-Za-z0-9._-]*/)?[A-Za-z0-9_-][A-Za-z0-9._-]*")


@dataclass
class SiteState:
    """What the last build read and wrote: the results root, the metrics its runs table holds, per
    sweep its mark and what the site knows of it, each page's digest, each copied report's stat, the
    bisects and damaged results it showed, each case's index rows, and the runs and gate rows of every
    sweep (``analysis.site_runs``), and what rendered the pages."""

    root: str
    metrics: list[str]
    sweeps: dict[str, dict[str, Any]] = field(default_factory=dict)  # id -> {"mark": [...], "info": {...}}
    pages: dict[str, str] = field(default_factory=dict)  # page path under out -> digest of its content
    copies: dict[str, list[int]] = field(default_factory=dict)  # copied file under out -> [size, mtime_ns]
    bisects: list[dict[str, Any]] = field(default_factory=list)  # what the site showed of each bisect
    damaged: list[str] = field(default_factory=list)  # the damaged results it named
    rows: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # case -> its index rows
    renderer: str = ""  # what rendered the pages (``render.site_assets.renderer_id``)
    series: pa.Table | None = None
    gates: pa.Table | None = None


def state_dir(out: Path) -> Path:
    return out / STATE_DIR


def load_site_state(out: Path) -> SiteState | None:
    """The state the last build left in ``out``; None when there is none of this format (or it is
    damaged: not of the shape ``save_site_state`` writes, ``well_formed``)."""
    directory = state_dir(out)
    try:
        raw = json.loads((directory / "state.json").read_text(encoding="utf-8"))
        if not well_formed(raw):
            return None
        series, gates = (pq.read_table(directory / name) for name in ("series.parquet", "gates.parquet"))
    except (*READ_ERRORS, KeyError):
        return None
    return SiteState(str(raw["root"]), list(raw["metrics"]), dict(raw["sweeps"]), dict(raw["pages"]),
                     dict(raw["copies"]), list(raw["bisects"]), list(raw["damaged"]), dict(raw["rows"]),
                     raw.get("renderer", ""), series, gates)


def well_formed(raw: object) -> bool:
    """Whether ``raw`` (a parsed ``state.json``) is of this format and of the shape ``save_site_state``
    writes, every page and copy it names a file under the site's directory (``_SITE_FILE``)."""
    return (isinstance(raw, dict) and raw.get("format") == FORMAT and isinstance(raw.get("root"), str)
            and _list_of(raw.get("metrics"), _text) and _list_of(raw.get("damaged"), _text)
            and _map_of(raw.get("sweeps"), _sweep_entry)
            and _map_of(raw.get("pages"), _text, _site_file)
            and _map_of(raw.get("copies"), lambda v: _list_of(v, _integer) and len(v) == 2, _site_file)
            and _list_of(raw.get("bisects"), _bisect_entry)
            and _map_of(raw.get("rows"), lambda v: _list_of(v, lambda row: isinstance(row, dict)))
            and _text(raw.get("renderer", "")))


def _text(value: object) -> bool:
    return isinstance(value, str)


def _integer(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _site_file(value: object) -> bool:
    return isinstance(value, str) and _SITE_FILE.fullmatch(value) is not None


def _list_of(value: object, item: Callable[[Any], bool]) -> bool:
    return isinstance(value, list) and all(item(v) for v in value)


def _map_of(value: object, item: Callable[[Any], bool], key: Callable[[Any], bool] = _text) -> bool:
    return isinstance(value, dict) and all(key(k) and item(v) for k, v in value.items())


def _sweep_entry(entry: object) -> bool:
    """``{"mark": [...] | None, "info": {...}}`` and maybe ``"unreadable": why``."""
    return (isinstance(entry, dict) and isinstance(entry.get("info"), dict)
            and (entry.get("mark") is None or _list_of(entry.get("mark"), _integer))
            and _text(entry.get("unreadable", "")))


def _bisect_entry(entry: object) -> bool:
    """What the build compares of a bisect it showed: its case (or None) and its step sweeps."""
    return (isinstance(entry, dict) and "case" in entry and (entry["case"] is None or _text(entry["case"]))
            and _list_of(entry.get("steps"), _text))


def save_site_state(out: Path, state: SiteState) -> None:
    """Write ``state`` (its tables first, then ``state.json``, which names them)."""
    directory = state_dir(out)
    for name, table in (("series.parquet", state.series), ("gates.parquet", state.gates)):
        if table is not None:
            write_with(directory / name, lambda tmp, t=table: pq.write_table(t, tmp))
    document = {"format": FORMAT, "root": state.root, "metrics": state.metrics, "sweeps": state.sweeps,
                "pages": state.pages, "copies": state.copies, "bisects": state.bisects,
                "damaged": state.damaged, "rows": state.rows, "renderer": state.renderer}
    write_text_unsynced(directory / "state.json", json.dumps(document))


def sweep_marks(root: Path) -> dict[str, list[int] | None]:
    """Per sweep with a runs partition or a record: its mark (``None`` where it is racy)."""
    partitions = sweep_partitions(root)
    records = _stats(sweeps_dir(root), ".json")
    verdicts = _stats(root / "reports", VERDICTS_SUFFIX)
    now_ns = time.time_ns()
    marks: dict[str, list[int] | None] = {}
    for sweep_id in sorted({*partitions, *records}):
        partition, record = partitions.get(sweep_id), records.get(sweep_id)
        verdict = verdicts.get(sweep_id)
        stamps = [s.st_mtime_ns for s in (partition, record, verdict) if s is not None]
        if any(now_ns - stamp < RACY_S * 1e9 for stamp in stamps):
            marks[sweep_id] = None
            continue
        marks[sweep_id] = [*_mark(partition, "st_ino"), *_mark(record, "st_size"), *_mark(verdict, "st_size")]
    return marks


def _mark(stat: os.stat_result | None, identity: str) -> list[int]:
    return [-1, -1] if stat is None else [getattr(stat, identity), stat.st_mtime_ns]


def _stats(directory: Path, suffix: str) -> dict[str, os.stat_result]:
    """Name (less ``suffix``) -> stat of the regular files ``directory`` holds with that suffix."""
    found = {}
    try:
        entries = list(os.scandir(directory))
    except FileNotFoundError:
        return found
    for entry in entries:
        wanted = entry.name.endswith(suffix) and not entry.name.startswith(".")
        if wanted and entry.is_file(follow_symlinks=False):
            try:
                found[entry.name[:-len(suffix)]] = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue
    return found


def read_verdicts(root: Path, sweep_id: str) -> object | None:
    """The parsed ``reports/<id>.verdicts.json`` of a sweep; None when it is missing or not JSON."""
    try:
        return json.loads((root / "reports" / f"{sweep_id}{VERDICTS_SUFFIX}").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
