"""``shasweep waive``: arguments in, ``session.waive`` records (or ``--revoke``s) an accepted exception
to a gate in a sweep's record, what was recorded printed."""

from __future__ import annotations

import argparse

from orchestrator.session.waive import record_waiver


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
    done = record_waiver(args.sweep_id, args.case, args.reason, side=args.side, gate=args.gate, by=args.by,
                         revoke=args.revoke, results_root=args.results)
    verb = "revoked the waivers of" if args.revoke else "waived FAILs of"
    print(f"sweep {done.sweep_id}: {done.entry.by} {verb} {done.entry.describe()}: {args.reason}")
    print(f"shasweep report {done.sweep_id} --results {done.results_root} shows the verdicts and the exit "
          "code with it")
    return 0
