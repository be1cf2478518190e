"""``shasweep plan`` and ``shasweep run`` (new sweeps and ``--resume``): arguments in, the session
(``orchestrator.session``) does the work, the report printed at the end."""


from __future__ import annotations

import argparse
import platform
from pathlib import Path
from typing import TYPE_CHECKING

from orchestrator.capabilities import SUITE_CASE
from orchestrator.cli.python_option import add_python_argument, with_python
from orchestrator.cli.tls_options import add_tls_arguments, tls_files
from orchestrator.errors import InvalidInputError
from orchestrator.plan.expand import planned_cases
from orchestrator.session import (
    RunOptions,
    SweepRun,
    lockstep_residency,
    noise_estimates,
    plan_sweep,
    resume,
    run_sweep,
)
from orchestrator.spec.commands import passes_variant
from orchestrator.spec.schema import Order

if TYPE_CHECKING:
    from orchestrator.session import SweepPlan


def add_sweep_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("sweep", type=Path, help="sweep YAML file")
    parser.add_argument("overrides", nargs="*", metavar="KEY=VALUE",
                        help="dotlist overrides of the sweep's keys, e.g. params.num_envs=64 repeats=1 "
                             "sides.b.ref=main; +KEY=VALUE adds a key it lacks, e.g. +sides.c.ref=main")
    add_python_argument(parser)


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("sweep", nargs="?", type=Path, help="sweep YAML file")
    source.add_argument("--resume", metavar="SWEEP_ID|latest",
                        help="run again the runs of a recorded sweep that are not ok (same SHAs, run keys)")
    parser.add_argument("overrides", nargs="*", metavar="KEY=VALUE",
                        help="dotlist overrides of the sweep's keys, e.g. params.num_envs=64 repeats=1 "
                             "sides.b.ref=main; +KEY=VALUE adds a key it lacks, e.g. +sides.c.ref=main")
    parser.add_argument("--results", metavar="DIR",
                        help="with --resume: the results root holding the sweep (default: 'results' in the "
                             "git repo of the current directory); a new sweep's is its results key")
    parser.add_argument("--scheduler", metavar="ADDR",
                        help="tcp://HOST:PORT of a Dask scheduler (default: an embedded LocalCluster)")
    parser.add_argument("--no-progress", action="store_true",
                        help="no progress bars (the dashboard URL and one line per finished run remain)")
    add_python_argument(parser)
    add_tls_arguments(parser)


def cmd_plan(args: argparse.Namespace) -> int:
    """Validate a sweep and print its plan without running anything."""
    plan = plan_sweep(args.sweep, with_python(args, args.overrides))
    print(format_plan(plan))
    for line in noise_estimates(plan, platform.node()):
        print(line)
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    """Validate, record, dispatch, then report; the exit code follows the report."""
    options = run_options(args)
    options.security()  # the TLS options checked before anything is recorded
    overrides = with_python(args, args.overrides)
    if args.resume is not None:
        run = resume(args.resume, args.results or "results", options)
    elif args.results is not None:
        raise InvalidInputError("--results goes with --resume; a new sweep writes to its results key "
                                "(override it with results=DIR)")
    else:
        run = run_sweep(plan_sweep(args.sweep, overrides), options)
    return _report_run(run.results_root, run.sweep_id)


def run_options(args: argparse.Namespace) -> RunOptions:
    """The dispatch options of ``run`` and ``bisect``: ``--scheduler``, ``--no-progress``, ``--tls-*``;
    what the end of the sweep needs is imported while the cluster starts."""
    from orchestrator.session.reports import import_report_modules

    return RunOptions(scheduler=args.scheduler, progress=not args.no_progress, tls=tls_files(args),
                      while_connecting=import_report_modules)


def _report_run(root: Path, sweep_id: str) -> int:
    """The report at the end of ``run``, with how to resume when a run is not ok."""
    from orchestrator.session.reports import show_report  # the report's readers: only once a sweep ran

    return show_report(SweepRun(sweep_id, root), html=True, resume_hint=True)


def format_plan(plan: SweepPlan) -> str:
    """The sides with their SHAs, then one line per run in execution order."""
    resolved, runs, spec = plan.resolved, plan.runs, plan.spec
    cases = planned_cases(spec)
    what = f"1 suite run of cases {', '.join(spec.cases)}" if cases == [SUITE_CASE] else f"{len(cases)} cases"
    lines = [f"sweep {spec.name}: {len(runs)} runs ({what} x {len(spec.sides)} sides x "
             f"{spec.repeats} repeats, order {spec.order.value}), repo {resolved.repo}",
             f"results: {resolved.results_root}"]
    if spec.adaptive:
        extra = len(cases) * len(spec.sides) * (spec.max_rounds - spec.repeats)
        budget = f", or until the runs took budget_s={spec.budget_s:g} s" if spec.budget_s else ""
        lines.append(f"adaptive: min {len(runs)} runs, max {len(runs) + extra} runs: after round "
                     f"{spec.repeats}, one more round at a time of the undecided cells and their "
                     f"baselines, up to max_repeats={spec.max_rounds}{budget}; looks share each gate's "
                     f"error rate by spending={spec.spending.value}")
    if spec.pythonpath != ["."]:
        lines.append(f"pythonpath (first on the bench's PYTHONPATH): {', '.join(spec.pythonpath)}")
    lines += plan.warnings
    if spec.order is Order.lockstep and spec.lockstep is not None:
        blocks = spec.lockstep
        lines.append(f"lockstep: {blocks.blocks} blocks of {blocks.block_steps} steps a side per round, each "
                     f"after {blocks.block_warmup} warm-up step(s); a SHA without the control channel: "
                     f"fallback {blocks.fallback.value}")
        lines.append(lockstep_residency(plan))
    for label, side in spec.sides.items():
        settings = resolved.settings[label]
        marker = " (baseline)" if label == spec.baseline else ""
        variant = f"variant {settings.variant}, " if passes_variant(spec.command) else ""
        python = f", python {side.python or spec.python}" if side.python or spec.python else ""
        lines.append(f"side {label}{marker}: {side.ref} = {resolved.shas[label]}, "
                     f"{variant}params {_params_text(settings.params)}{python}")
    row = "{:>4}  {:<12} {:<40} {:>3}  {:<12}  {}"
    lines.append(row.format("#", "side", "case", "rep", "sha", "run_key"))
    lines += [row.format(r.order, r.side, r.case, r.repeat, r.sha[:12], r.run_key) for r in runs]
    return "\n".join(lines)


def _params_text(params: dict) -> str:
    return " ".join(f"{name}={value}" for name, value in params.items()) or "-"
