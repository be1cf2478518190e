"""What the results site keeps of each sweep: its measured runs as the history reads them (one slim row
per run) and its gates' decided intervals (one row per gate, case and side).

The runs are audited as ``history`` audits them (no record needed) and keep only what the site shows
and filters by: sweep, case, side, SHA, host, params and command (the settings label's key), status,
start, plan order and the metrics. The gates come from the report's own path
(``report_model.decided_gates``: the record's audit, its boundary, its waivers) or, where the sweep's
``verdicts.json`` is current, from that document, which the same path wrote: either way the figures
are the gates', never the site's own. ``verdicts.json`` is read from disk, so every field is checked
before it is believed; a document that fails a check is not used.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandas as pd
import pyarrow as pa

from orchestrator.analysis.history_model import HISTORY_COLUMNS
from orchestrator.analysis.legacy_audit import apply_audit
from orchestrator.analysis.report_model import decided_gates
from orchestrator.analysis.suites import one_sided_cases, sweep_cases
from orchestrator.analysis.verdicts import GateVerdict, Verdict
from orchestrator.capabilities import SUITE_CASE
from orchestrator.spec.record import SweepRecord

# one row per measured run of the root (``series_rows``)
SERIES_COLUMNS: tuple[str, ...] = ("sweep_id", "run_key", "case", "side", "sha", "host", "params", "command",
                                   "status", "started_at", "order")
# one row per gate verdict of a sweep (``gate_rows``)
GATE_COLUMNS: tuple[str, ...] = ("sweep_id", "gate", "metric", "case", "side", "bound", "verdict", "waived",
                                 "ratio", "low", "high", "confidence")
_GATE_TYPES: dict[str, pa.DataType] = {"gate": pa.int64(), "waived": pa.bool_(), "ratio": pa.float64(),
                                       "low": pa.float64(), "high": pa.float64(), "confidence": pa.float64()}
VERDICTS = frozenset(v.value for v in Verdict)
VERDICTS_FORMAT = 2  # the ``verdicts.json`` format read (``render.verdicts_json.FORMAT_VERSION``)
ONE_SIDED: tuple[str, ...] = ("added", "removed")  # a case one side has alone: its row's ``verdict``
NO_GATE = -1  # the ``gate`` of such a row
# what the report's gates read of a run besides its metrics (``report_model.decided_gates``)
GATED_COLUMNS: tuple[str, ...] = ("run_key", "case", "side", "repeat", "status", "host_id", "blocks")
_READ_TYPES: dict[str, pa.DataType] = {"started_at": pa.timestamp("us", tz="UTC"), "order": pa.int64(),
                                       "repeat": pa.int64(), "audited": pa.bool_(), "steps": pa.int64(),
                                       "throughput": pa.float64(), "measure_wall_s": pa.float64()}


def series_schema(metrics: list[str]) -> pa.Schema:
    """The cache's schema of ``series_rows`` with one float column per metric."""
    kinds = {"started_at": pa.timestamp("us", tz="UTC"), "order": pa.int64()}
    return pa.schema([(name, kinds.get(name, pa.string())) for name in SERIES_COLUMNS]
                     + [(metric, pa.float64()) for metric in metrics if metric not in SERIES_COLUMNS])


def gate_schema() -> pa.Schema:
    return pa.schema([(name, _GATE_TYPES.get(name, pa.string())) for name in GATE_COLUMNS])


def read_schema(metrics: list[str]) -> pa.Schema:
    """What to read of the runs of a sweep to make both its series rows and its gates: the history's
    columns, what the report's gates read (round, host, lockstep blocks) and the metrics."""
    names = dict.fromkeys([*HISTORY_COLUMNS, "case", "repeat", "host_id", "host_hostname", "reused_from",
                           "blocks", "suite_run_key", *metrics])
    return pa.schema([(name, _READ_TYPES.get(name) or (pa.float64() if name in metrics else pa.string()))
                      for name in names])


def series_rows(runs: pd.DataFrame, metrics: list[str]) -> pd.DataFrame:
    """The measured runs of ``runs`` (copies ``store.reuse`` made are not new samples), audited as the
    history audits them, as ``series_schema`` rows; a suite's own run (case ``(suite)``) left out."""
    measured = runs[runs["reused_from"].isna() & (runs["case"] != SUITE_CASE)]
    audited = apply_audit(measured)
    host = audited["host_id"].where(audited["host_id"].notna(), audited["host_hostname"])
    frame = audited.assign(host=host.fillna("-"))
    return frame[[*SERIES_COLUMNS, *(m for m in metrics if m not in SERIES_COLUMNS)]].reset_index(drop=True)


def gate_rows(sweep_id: str, verdicts: list[GateVerdict]) -> list[dict[str, Any]]:
    """``verdicts`` (a sweep's decided gates) as ``GATE_COLUMNS`` rows."""
    return [{"sweep_id": sweep_id, "gate": v.gate, "metric": v.metric, "case": v.case, "side": v.side,
             "bound": v.bound, "verdict": str(v.verdict.value), "waived": v.waived is not None,
             "ratio": v.comparison.ratio, "low": v.comparison.low, "high": v.comparison.high,
             "confidence": v.comparison.confidence} for v in verdicts]


def one_sided_row(sweep_id: str, case: str, side: str, presence: str) -> dict[str, Any]:
    """A gate row for a case one side has alone (``presence``: added or removed): no gate, no figure."""
    return {"sweep_id": sweep_id, "gate": NO_GATE, "metric": "", "case": case, "side": side, "bound": "",
            "verdict": presence, "waived": False, "ratio": math.nan, "low": math.nan, "high": math.nan,
            "confidence": math.nan}


def computed_gate_rows(record: SweepRecord, runs: pd.DataFrame) -> list[dict[str, Any]]:
    """The gates of ``record``'s sweep decided from its ``runs`` (every run of the sweep, copies
    included, as its report reads them), and its added and removed cases."""
    audited = _gated_columns(apply_audit(runs, record), record)
    one_sided = one_sided_cases(record.spec, audited, sweep_cases(record.spec, audited))
    return gate_rows(record.sweep_id, decided_gates(record, audited, power=False)) + [
        one_sided_row(record.sweep_id, case, side, word) for side, cases in one_sided.items()
        for word in ONE_SIDED for case in getattr(cases, word)]


def _gated_columns(runs: pd.DataFrame, record: SweepRecord) -> pd.DataFrame:
    """Only what the gates read of ``runs`` (audited): the comparisons slice the frame many times."""
    metrics = [g.metric for g in record.spec.gates]
    return runs[[c for c in dict.fromkeys(GATED_COLUMNS + tuple(metrics)) if c in runs]]


def plain_text(runs: pd.DataFrame) -> pd.DataFrame:
    """``runs`` with its text columns as Python objects: slicing and grouping a frame of Arrow-backed
    strings row by row, as the gates and the audit do per sweep, is several times slower."""
    return runs.astype({c: object for c in runs.columns if pd.api.types.is_string_dtype(runs[c])})


def document_gate_rows(sweep_id: str, document: object) -> list[dict[str, Any]] | None:
    """The gates (and added and removed cases) a ``verdicts.json`` document (``render.verdicts_json``)
    holds, or None when it is not one of this sweep's in the current format (then the gates are
    decided from the runs: an older format counted an added case as NO DATA)."""
    if not isinstance(document, Mapping) or document.get("sweep_id") != sweep_id \
            or document.get("format") != VERDICTS_FORMAT or not isinstance(document.get("verdicts"), list):
        return None
    rows = [_document_row(sweep_id, entry) for entry in document["verdicts"]]
    for word in ONE_SIDED:
        entries = document.get(word)
        if not isinstance(entries, list):
            return None
        rows += [one_sided_row(sweep_id, e["case"], e["side"], word) if _one_sided_entry(e) else None
                 for e in entries]
    return None if any(row is None for row in rows) else rows  # type: ignore[return-value]


def _one_sided_entry(entry: object) -> bool:
    return isinstance(entry, Mapping) and all(isinstance(entry.get(key), str) for key in ("case", "side"))


def _document_row(sweep_id: str, entry: object) -> dict[str, Any] | None:
    if not isinstance(entry, Mapping):
        return None
    texts = {key: entry.get(key) for key in ("metric", "case", "side", "bound", "verdict")}
    numbers = {key: _number(entry.get(key)) for key in ("ratio", "low", "high", "confidence")}
    gate, waived = entry.get("gate"), entry.get("waived", False)
    if not all(isinstance(v, str) for v in texts.values()) or texts["verdict"] not in VERDICTS \
            or isinstance(gate, bool) or not isinstance(gate, int) or not isinstance(waived, bool) \
            or any(v is False for v in numbers.values()):
        return None
    return {"sweep_id": sweep_id, "gate": gate, **texts, "waived": waived, **numbers}


def _number(value: object) -> float | bool:
    """A finite JSON number as float, null as NaN; False for anything else."""
    if value is None:
        return math.nan
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return float(value) if math.isfinite(value) else False
