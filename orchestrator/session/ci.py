"""``shasweep ci``: a pull request gated in one step (docs/ci.md).

From a clone, with no sweep YAML: the CI context (``session.ci_context``) and ``[tool.shasweep]``
(``spec.ci_config``, the command line over it) give the refs; ``plan.ci_commits`` the head and the
merge base; ``plan.suite_discovery`` the suite; ``session.ci_design`` the sweep. It runs as every
sweep does (``session.sweep``), its rounds within the time budget (``RunOptions.deadline``: the
rounds end ``OUTPUTS_S`` before the budget, counted from the command's start, is spent, and the
outputs of what it decided are written in that time),
and its report is written for every place a CI shows one (``session.ci_outputs``). An error is
written there too, before it is raised, so the comment and the outputs say why nothing was compared.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

import yaml

from orchestrator.errors import EXIT_RUN_FAILED, ShasweepError, interruption
from orchestrator.plan.ci_commits import DEFAULT_BASE, CiCommits, ci_commits
from orchestrator.plan.refs import repo_root
from orchestrator.plan.roots import results_root_for
from orchestrator.plan.suite_discovery import FoundSuite, find_suite, present_at
from orchestrator.session.ci_context import CiContext, ci_context
from orchestrator.session.ci_design import OUTPUTS_S, SWEEP_NAME, CiDesign, design_sweep, first_round_check
from orchestrator.session.ci_outputs import CiOutputs
from orchestrator.session.options import RunOptions
from orchestrator.session.sweep import plan_sweep, run_sweep, say
from orchestrator.spec.ci_config import (
    CiConfig,
    checked_instrument,
    parse_duration,
    read_ci_config,
    with_overrides,
)
from orchestrator.store import records

HISTORY_SWEEPS = 20  # earlier ci sweeps looked at for a round's duration


@dataclass(frozen=True)
class CiOptions:
    """The command line's part of ``shasweep ci``; None: ``[tool.shasweep]``'s value, then the CI's."""

    base: str | None = None
    head: str | None = None
    budget: str | None = None
    results: str | None = None
    out: str | None = None
    paths: tuple[str, ...] = ()
    instrument: str | None = None  # none, valgrind
    plan_only: bool = False  # design the sweep and say what it would run; run nothing
    progress: bool = False


@dataclass(frozen=True)
class CiResult:
    """How ``shasweep ci`` ended: its exit code and the lines it has left to print."""

    exit_code: int
    lines: tuple[str, ...] = ()


def locate(options: CiOptions, cwd: Path | None = None, environ: Mapping[str, str] | None = None) -> CiResult:
    """Where ``shasweep ci`` keeps its results root and outputs (``--locate``: the CI caches the
    first), also as step outputs ``results`` and ``out``."""
    repo, config, context = _setting(options, cwd, environ)
    outputs = CiOutputs(repo / config.out, context)
    values = {"results": str(results_root_for(config.results, repo)), "out": str(outputs.directory)}
    outputs.write_values(values, append_only=True)
    return CiResult(0, tuple(f"{name}={value}" for name, value in values.items()))


def run_ci(options: CiOptions, cwd: Path | None = None, environ: Mapping[str, str] | None = None) -> CiResult:
    """Find, design, run and report the comparison of the head with its merge base."""
    started = time.monotonic()
    repo, config, context = _setting(options, cwd, environ)
    outputs = CiOutputs(repo / config.out, context)
    try:
        commits = ci_commits(repo, options.base or context.base or config.base or DEFAULT_BASE,
                             options.head or context.head or "HEAD")
        found = find_suite(str(repo), commits.head, config)
        present = present_at(found, str(repo), commits.merge_base)
        if not present:
            return _nothing_to_compare(found, commits, None if options.plan_only else outputs)
        if present != found.paths:
            say(f"not at the merge base {commits.merge_base[:12]}, so not compared: "
                f"{', '.join(p for p in found.paths if p not in present)}")
            found = replace(found, paths=present)
        root = results_root_for(config.results, repo)
        design = design_sweep(found, config, commits, config.budget_s, repo,
                              lambda command, instrument: earlier_round_s(root, command, instrument))
        if options.plan_only:
            return CiResult(0, _plan_lines(found, commits, design, config))
        for line in _intro(found, commits, design, config):
            say(line)
        run = run_sweep(plan_sweep(design.spec, cwd=repo),
                        RunOptions(progress=options.progress, deadline=started + config.budget_s - OUTPUTS_S))
        first_round_check(run.record(), config.budget_s)
        return CiResult(outputs.write_report(run, commits, found.describe(), config.budget))
    except ShasweepError as exc:
        if not options.plan_only:
            outputs.write_error(str(exc), exc.exit_code)
        raise
    except KeyboardInterrupt as exc:  # Ctrl-C, or the CI cancelling the job (SIGTERM, SIGHUP)
        outputs.write_error(interruption(exc), EXIT_RUN_FAILED)
        raise


def earlier_round_s(root: Path, command: list[str], instrument: str = "none") -> float | None:
    """A round's seconds in the last finished ci sweep of ``command`` with ``instrument`` in ``root``
    (its wall time over its rounds, its start and a round its deadline stopped included: on the safe
    side), None when there is none."""
    if not (root / "sweeps").is_dir():
        return None
    ids = [name for name in records.sweeps_by_creation(root) if name.startswith(f"{SWEEP_NAME}-")]
    for sweep_id in ids[:HISTORY_SWEEPS]:  # the most recently created first
        try:
            record = records.read_record(root, sweep_id)
        except ShasweepError:
            continue
        rounds = record.adaptive.rounds if record.adaptive else record.spec.repeats
        same = record.spec.command == command and record.spec.instrument.value == instrument
        if record.status == "finished" and record.wall_s and same:  # a first round cut: at least this
            return record.wall_s / max(rounds, 1)
    return None


def _setting(options: CiOptions, cwd: Path | None, environ: Mapping[str, str] | None
             ) -> tuple[Path, CiConfig, CiContext]:
    """The repository, its configuration with the command line over it, and the CI context."""
    if options.budget is not None:
        parse_duration(options.budget, "--budget")  # named as given, before anything else
    if options.instrument is not None:
        checked_instrument(options.instrument, "--instrument")
    repo = repo_root((cwd or Path.cwd()).resolve(), "the current directory")
    config = with_overrides(read_ci_config(repo), budget=options.budget, results=options.results,
                            out=options.out, paths=options.paths, instrument=options.instrument)
    return repo, config, ci_context(os.environ if environ is None else environ)


def _nothing_to_compare(found: FoundSuite, commits: CiCommits, outputs: CiOutputs | None) -> CiResult:
    """A suite the merge base does not have: exit 0, said in the outputs (None: ``--plan``, none)."""
    why = (f"the merge base {commits.merge_base[:12]} has none of {', '.join(found.paths)}: the suite is "
           "new here, nothing to compare it with")
    if outputs is not None:
        outputs.write_skipped(why)
    return CiResult(0, (f"nothing compared: {why}",))


def _intro(found: FoundSuite, commits: CiCommits, design: CiDesign, config: CiConfig) -> list[str]:
    """What is compared, and how, before the sweep's own lines."""
    lines = [f"shasweep ci: {commits.head[:12]} ({commits.head_ref}) against the merge base "
             f"{commits.merge_base[:12]} with {commits.base_ref}; {found.describe()}",
             f"design: {design.order}, {design.spec.repeats} to {design.spec.max_rounds} rounds in a budget "
             f"of {config.budget} ({_round_times(design)})", *design.notes]
    if commits.same:
        lines.append(f"base and head are the same commit {commits.head[:12]}: an A/A comparison, the machine "
                     "against itself (a change it reports is noise)")
    return lines


def _round_times(design: CiDesign) -> str:
    """``a round ~21.0 s: about 15 benchmarks ...``; with counts, the counted rounds' and the later ones'."""
    first, later = design.estimate, design.later
    if later is None:
        return f"a round ~{first.seconds:.1f} s: {first.source}"
    return (f"the first {design.spec.repeats} rounds, counted, ~{first.seconds:.1f} s each: {first.source}; "
            f"the later ones ~{later.seconds:.1f} s: {later.source}")


def _plan_lines(found: FoundSuite, commits: CiCommits, design: CiDesign, config: CiConfig) -> tuple[str, ...]:
    """``--plan``: the introduction, the minimum budget, and the sweep as YAML."""
    return (*_intro(found, commits, design, config),
            f"minimum budget: {design.min_budget_s:.0f} s", "# the sweep shasweep ci runs:",
            yaml.safe_dump(design.config, sort_keys=False, default_flow_style=None, width=100).rstrip())
