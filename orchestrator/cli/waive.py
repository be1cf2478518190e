"""``shasweep waive``: record (or ``--revoke``) an accepted exception to a gate in a sweep's record."""

from __future__ import annotations

import argparse
import getpass
from datetime import UTC, datetime
from pathlib import Path

from orchestrator.analysis.waivers import REVOKE, WAIVE, active_waivers, new_entry, waiver_log
from orchestrator.errors import InvalidInputError
from orchestrator.plan.roots import results_root_for
from orchestrator.spec.load import check_waiver
from orchestrator.spec.schema import WaiverSpec
from orchestrator.store import records as sweep_record


def add_waive_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("sweep_id", metavar="SWEEP_ID|latest")
    parser.add_argument("--case", required=True, metavar="CASE",
                        help="the case whose FAIL is accepted, as the sweep's cases list it")
    parser.add_argument("--side", help="only this side (default: every side compared to the baseline)")
    parser.add_argument("--gate", type=int, metavar="N",
                        help="only the sweep's gate N, 0-based (default: every gate)")
    parser.add_argument("--reason", required=True, metavar="TEXT", help="why it is accepted (or revoked)")
    parser.add_argument("--by", metavar="NAME", help="who decides (default: the login name)")
    parser.add_argument("--revoke", action="store_true",
                        help="cancel the earlier waivers of exactly this case, side and gate")
    parser.add_argument("--results", default="results", metavar="DIR",
                        help="results root (default: 'results' in the git repo of the current directory)")


def cmd_waive(args: argparse.Namespace) -> int:
    """Append a waiver (or revocation) to the sweep record after checking it names real gate verdicts."""
    root = results_root_for(args.results, Path.cwd())
    sweep_id = sweep_record.resolve_sweep_id(root, args.sweep_id)
    record = sweep_record.read_record(root, sweep_id)
    by = args.by or _login_name()
    check_waiver(WaiverSpec(case=args.case, reason=args.reason, side=args.side, gate=args.gate, by=by),
                 record.spec, None)
    action = REVOKE if args.revoke else WAIVE
    entry = new_entry(action, args.case, args.side, args.gate, args.reason, by, datetime.now(UTC))
    if args.revoke and not any(w.target == entry.target for w in active_waivers(waiver_log(record))):
        raise InvalidInputError(f"sweep {sweep_id!r} has no waiver in force for {entry.describe()} to revoke")
    sweep_record.append_entry(root, sweep_id, "waivers", entry.to_dict())
    verb = "revoked the waivers of" if args.revoke else "waived FAILs of"
    print(f"sweep {sweep_id}: {by} {verb} {entry.describe()}: {args.reason}")
    print(f"shasweep report {sweep_id} --results {root} shows the verdicts and the exit code with it")
    return 0


def _login_name() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no login name in the environment and no passwd entry
        return "unknown"
