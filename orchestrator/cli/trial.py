"""``shasweep try``: run a sweep's bench once at one side's SHA on this host, no cluster, nothing
recorded, and print what the protocol read (``session.trial``) or exactly why it could not."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from orchestrator.cli.python_option import add_python_argument, with_python
from orchestrator.display import quantity, si_number, si_seconds
from orchestrator.printable import printable

if TYPE_CHECKING:
    from orchestrator.contract import RunResult
    from orchestrator.session.trial import Reading, TrialResult

HEADER_VALUE_CHARS = 160  # of each header key's value on its line (the stream log has all of it)


def add_try_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("sweep", type=Path, help="sweep YAML file")
    parser.add_argument("overrides", nargs="*", metavar="KEY=VALUE",
                        help="dotlist overrides of the sweep's keys, as for run, e.g. params.size=100")
    parser.add_argument("--side", help="the side whose SHA to run (default: the baseline)")
    parser.add_argument("--case", help="the case to run (default: the sweep's first)")
    add_python_argument(parser)


def cmd_try(args: argparse.Namespace) -> int:
    """Plan the sweep, run the chosen run once and print what was read; 0 when everything the gates
    and the report need was read, 3 when not, 2 for bad input."""
    from orchestrator.session import plan_sweep
    from orchestrator.session.trial import TrialOptions, try_bench

    plan = plan_sweep(args.sweep, with_python(args, args.overrides))
    trial = try_bench(plan, TrialOptions(side=args.side, case=args.case),
                      on_wait=lambda text: print(text, flush=True))
    print("\n".join(format_trial(trial, plan.spec.baseline)))
    return trial.exit_code


def format_trial(trial: TrialResult, baseline: str) -> list[str]:
    """What was run, where its logs are, the header, then per case its steps and every metric with its
    value, then the outcome (or why the run failed)."""
    run, result = trial.run, trial.result
    side = f"{run.side} (baseline)" if run.side == baseline else run.side
    lines = [f"try: side {side} ({run.ref} = {run.sha[:12]}), case {run.case}, protocol {run.protocol}",
             f"logs: {trial.log_dir} (argv.txt, stdout.log, stderr.log)"]
    if result.worktree:
        lines.append(f"worktree: {result.worktree}")
    waited = ("" if result.lock_wait_s is None
              else f", after {result.lock_wait_s:.0f} s waiting for the host lock")
    exit_code = "-" if result.exit_code is None else result.exit_code
    lines.append(f"status: {result.status} (exit code {exit_code}) in {result.wall_s:.1f} s{waited}")
    lines += _header_lines(result.header)
    lines += _block_lines(result, trial.throughput_unit)
    for reading in trial.readings:
        measured = reading.result.steps.measured
        lines.append(f"case {reading.case}: {reading.result.status}; steps: {measured} measured, "
                     f"{len(reading.result.steps) - measured} warm-up")
        lines += _metric_lines(reading, trial.throughput_unit)
    return lines + _outcome_lines(trial)


def _outcome_lines(trial: TrialResult) -> list[str]:
    """Why the trial failed (the run, or each case that failed or lacks a needed metric), or ok."""
    if trial.result.status != "ok":
        return [f"try: the run {trial.result.status}: {_error(trial.result)}"]
    lines = []
    for reading in trial.readings:
        if reading.result.status != "ok":
            lines.append(f"try: case {reading.case} {reading.result.status}: {_error(reading.result)}")
        elif reading.missing:
            lines.append(f"try: case {reading.case} did not report {', '.join(reading.missing)}, which the "
                         "sweep's gates or metrics need: the sweep would have no numbers for them")
    return lines or ["try: ok: the sweep can read every metric its gates and report need"]


def _header_lines(header: dict | None) -> list[str]:
    if not header:
        return ["header: none (the protocol reads no header, or the bench sent none)"]
    lines = ["header:"]
    for key, value in header.items():
        if key == "kind":
            continue
        text = json.dumps(value, sort_keys=True, default=str)  # JSON escapes every control character
        cut = text if len(text) <= HEADER_VALUE_CHARS else text[:HEADER_VALUE_CHARS - 3] + "..."
        lines.append(f"  {json.dumps(str(key))[1:-1]}: {cut}")
    return lines


def _block_lines(result: RunResult, throughput_unit: str | None) -> list[str]:
    """A lockstep trial's blocks as the worker read them, one line each (its side ran alone), or why
    the side ran without the control channel."""
    if result.ran_in == "interleaved":
        return [f"lockstep: ran without the control channel: {printable(result.fallback or '')}"]
    if not result.blocks:
        return []
    lines = [f"blocks: {len(result.blocks)}, this side alone in its lockstep round"]
    for block in result.blocks:
        steps, wall_s = block.get("steps"), block.get("wall_s")
        kind = "warm-up" if block.get("warmup") else f"cycle {block.get('cycle')}"
        counted = f"{steps} step" if steps == 1 else f"{steps} steps"
        line = f"  block {block.get('block')}: {kind}, {counted} in {_ms(wall_s)}"
        if isinstance(steps, int) and steps > 0 and isinstance(wall_s, int | float):
            line += f" ({_ms(wall_s / steps)} a step)"
        if isinstance(throughput := block.get("throughput"), int | float):
            line += f", throughput {_throughput(throughput, throughput_unit)}"
        lines.append(line)
    return lines


def _ms(seconds: object) -> str:
    return si_seconds(seconds) if isinstance(seconds, int | float) else "-"


def _throughput(value: float, throughput_unit: str | None) -> str:
    """``5.44 M calls/s``; a bench's own unit: ``5.44 M per s (the bench's unit)``."""
    return quantity(value, "throughput", throughput_unit) if throughput_unit else f"{si_number(value)} per s"


def _metric_lines(reading: Reading, throughput_unit: str | None) -> list[str]:
    """One line per metric: ``*`` marks the ones the gates and the report need."""
    if not reading.values:
        return []
    width = max(len(name) for name in reading.values)
    lines = ["  metrics (* = a gate or the sweep's metrics need it):"]
    for name, value in reading.values.items():
        mark = "*" if name in reading.needed else " "
        if value is None:
            shown = "not reported"
        elif name == "throughput":
            shown = _throughput(value, throughput_unit) + ("" if throughput_unit else " (the bench's unit)")
        else:
            shown = quantity(value, name)
        lines.append(f"    {mark} {json.dumps(name)[1:-1]:<{width}}  {shown}")
    return lines


def _error(result: RunResult) -> str:
    """``result``'s error line by line, each ``printable`` (bench output must not steer the terminal)."""
    return "\n".join(printable(line) for line in (result.error or "(no error recorded)").splitlines())
