"""``shasweep list``: the recorded sweeps of a results root, newest first, one line each: status (a
``running`` sweep whose client is gone is ``stopped (client gone)``), ok runs of the planned, and the
verdict line of its last report (``reports/<id>.verdicts.json``). The latest ``--last`` (50) unless
``--all``: only the records shown are read, so a root of thousands of sweeps lists as fast as a new one."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from orchestrator.cli.last_n import add_last_arguments, last_n
from orchestrator.errors import InvalidInputError
from orchestrator.plan import lifecycle
from orchestrator.plan.roots import results_root_for
from orchestrator.spec.record import SweepRecord
from orchestrator.store import records as sweep_record

NOT_REPORTED = "(not reported)"
DEFAULT_SHOWN = 50


def add_list_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--results", default="results", metavar="DIR",
                        help="results root (default: 'results' in the git repo of the current directory)")
    add_last_arguments(parser, "sweeps", DEFAULT_SHOWN)


def cmd_list(args: argparse.Namespace) -> int:
    """Print one line per recorded sweep, newest first; the latest ``--last`` of them unless ``--all``."""
    last = last_n(args)
    root = results_root_for(args.results, Path.cwd())
    found = sweep_record.sweeps_by_creation(root)
    shown = found[:last]
    rows = [sweep_row(root, sweep_id, _record(root, sweep_id)) for sweep_id in shown]
    if not rows:
        print(f"no sweeps recorded under {sweep_record.sweeps_dir(root)}")
        return 0
    width = max(len(row["sweep_id"]) for row in rows)
    status_width = max(9, *(len(row["status"]) for row in rows))
    for row in rows:
        print(f"{row['sweep_id']:<{width}}  {row['created']:<19}  {row['status']:<{status_width}}  "
              f"runs ok {row['runs']:<7}  {row['verdicts']}")
    if len(shown) < len(found):
        print(f"{len(found) - len(shown)} earlier sweeps not shown (--all lists every one)")
    return 0


def _record(root: Path, sweep_id: str) -> SweepRecord | None:
    """The sweep's record; None when it is reserved, unreadable or of an unexpected shape."""
    try:
        return sweep_record.read_record(root, sweep_id)
    except (InvalidInputError, OSError):
        return None


def sweep_row(root: Path, sweep_id: str, record: SweepRecord | None) -> dict[str, Any]:
    """What ``list`` shows of one sweep; an unreadable record (None) is listed as such, never fatal."""
    if record is None:
        return {"sweep_id": sweep_id, "created": "", "status": "unreadable record", "runs": "-",
                "verdicts": NOT_REPORTED}
    ok = sum(o.status == "ok" for o in record.outcomes)
    runs = f"{ok}/{record.planned_runs}" if record.outcomes else f"?/{record.planned_runs}"
    status = lifecycle.current_status(record, sweep_record.client_alive(root, sweep_id))
    return {"sweep_id": sweep_id, "created": record.created[:19].replace("T", " "), "status": status,
            "runs": runs, "verdicts": _verdicts(root, sweep_id)}


def _verdicts(root: Path, sweep_id: str) -> str:
    """The verdict line of the sweep's last report."""
    try:
        document = json.loads((root / "reports" / f"{sweep_id}.verdicts.json").read_text(encoding="utf-8"))
        return str(document["verdict_line"])
    except (OSError, ValueError, KeyError, TypeError):
        return NOT_REPORTED
