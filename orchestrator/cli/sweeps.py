"""``shasweep list``: the recorded sweeps of a results root, newest first, one line each: status, ok
runs of the planned, and the verdict line of its last report (``reports/<id>.verdicts.json``)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from orchestrator.plan.roots import results_root_for
from orchestrator.spec.record import SweepRecord
from orchestrator.store import records as sweep_record

NOT_REPORTED = "(not reported)"


def add_list_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--results", default="results", metavar="DIR",
                        help="results root (default: 'results' in the git repo of the current directory)")


def cmd_list(args: argparse.Namespace) -> int:
    """Print one line per recorded sweep, newest first."""
    root = results_root_for(args.results, Path.cwd())
    def created(item: tuple[str, SweepRecord | None]) -> tuple:
        return sweep_record.creation_order(item[0], item[1].sequence if item[1] else None)

    found = sorted(sweep_record.all_records(root), key=created, reverse=True)  # newest created first
    rows = [sweep_row(root, sweep_id, record) for sweep_id, record in found]
    if not rows:
        print(f"no sweeps recorded under {sweep_record.sweeps_dir(root)}")
        return 0
    width = max(len(row["sweep_id"]) for row in rows)
    for row in rows:
        print(f"{row['sweep_id']:<{width}}  {row['created']:<19}  {row['status']:<9}  "
              f"runs ok {row['runs']:<7}  {row['verdicts']}")
    return 0


def sweep_row(root: Path, sweep_id: str, record: SweepRecord | None) -> dict[str, Any]:
    """What ``list`` shows of one sweep; an unreadable record (None) is listed as such, never fatal."""
    if record is None:
        return {"sweep_id": sweep_id, "created": "", "status": "unreadable record", "runs": "-",
                "verdicts": NOT_REPORTED}
    ok = sum(o.status == "ok" for o in record.outcomes)
    runs = f"{ok}/{record.planned_runs}" if record.outcomes else f"?/{record.planned_runs}"
    return {"sweep_id": sweep_id, "created": record.created[:19].replace("T", " "), "status": record.status,
            "runs": runs, "verdicts": _verdicts(root, sweep_id)}


def _verdicts(root: Path, sweep_id: str) -> str:
    """The verdict line of the sweep's last report."""
    try:
        document = json.loads((root / "reports" / f"{sweep_id}.verdicts.json").read_text(encoding="utf-8"))
        return str(document["verdict_line"])
    except (OSError, ValueError, KeyError, TypeError):
        return NOT_REPORTED
