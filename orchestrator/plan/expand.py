"""From a validated spec to the ordered list of ``PlannedRun``s.

``resolve_sweep`` pins everything the plan depends on (repo root, full SHAs, per-side settings,
results root) and fails before dispatch when any of it is wrong. ``build_plan`` then expands
cases x sides x repeats in the spec's order:

* ``interleaved``: round r = for each case (in spec order), every side once in declaration order:
  A B A B ... so slow drift of the machine hits every side alike;
* ``serial``: per case, every repeat of the first side, then of the next: A A A B B B;
* ``randomized``: a seeded block design: each round is a random permutation of all (case, side)
  cells, drawn from ``random.Random(order_seed)``: the same seed gives the same plan;
* ``lockstep``: as ``interleaved``; the dispatcher sends each case's runs of a round to the worker
  as one round (``worker.round_task``), whose processes take turns block by block.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass
from pathlib import Path

from orchestrator.capabilities import SUITE_CASE, describe
from orchestrator.contract import InstrumentSettings, LockstepSettings, PlannedRun, QuietLimits
from orchestrator.errors import RefError
from orchestrator.plan.integrity import command_digest
from orchestrator.plan.refs import check_directory, find_repo_root, repo_root, resolve_ref
from orchestrator.plan.roots import check_results_root, results_root_for
from orchestrator.spec.case_names import case_parts
from orchestrator.spec.commands import bench_argv
from orchestrator.spec.instrument_checks import marks_steps
from orchestrator.spec.load import side_settings
from orchestrator.spec.protocol_checks import is_suite
from orchestrator.spec.schema import Instrument, Order, RunSettings, SweepSpec

Cell = tuple[str, str, int]  # (case, side, repeat)
@dataclass(frozen=True)
class ResolvedSweep:
    """A validated spec pinned to absolute paths and full SHAs."""

    spec: SweepSpec
    repo: Path
    results_root: Path
    shas: dict[str, str]  # side label -> full SHA
    settings: dict[str, RunSettings]  # side label -> variant, params, env after overrides
    sweep_dir: Path | None = None  # the sweep YAML's directory ({sweep_dir}); None: the repo


def resolve_sweep(spec: SweepSpec, cwd: Path, sweep_dir: Path | None = None) -> ResolvedSweep:
    """Resolve repo, refs and results root of ``spec`` for a command run in ``cwd``; ``sweep_dir`` is
    the directory of the sweep YAML (``{sweep_dir}``)."""
    cwd_repo = find_repo_root(cwd)
    if spec.repo is None:
        if cwd_repo is None:
            raise RefError(f"not set, and the current directory {str(cwd)!r} is in no git repository", "repo")
        repo = cwd_repo
    else:
        repo = repo_root((cwd / spec.repo).resolve())
    shas = {label: resolve_ref(repo, side.ref, f"sides.{label}.ref") for label, side in spec.sides.items()}
    for i, directory in enumerate(spec.pythonpath):
        for label, sha in shas.items():
            check_directory(repo, sha, directory, f"pythonpath[{i}]", f"sides.{label}")
    settings = {label: side_settings(spec, label) for label in spec.sides}
    results_root = results_root_for(spec.results, cwd)
    check_results_root(results_root)
    return ResolvedSweep(spec=spec, repo=repo, results_root=results_root, shas=shas, settings=settings,
                         sweep_dir=sweep_dir.resolve() if sweep_dir is not None else None)


def plan_cells(cases: list[str], sides: list[str], repeats: int, order: Order, seed: int) -> list[Cell]:
    """Every (case, side, repeat) exactly once, in ``order`` (see the module docstring)."""
    if order is Order.serial:
        return [(c, s, r) for c in cases for s in sides for r in range(repeats)]
    rounds = [[(c, s, r) for c in cases for s in sides] for r in range(repeats)]
    if order is Order.randomized:
        rng = random.Random(seed)
        for block in rounds:
            rng.shuffle(block)
    return [cell for block in rounds for cell in block]


def run_key(sweep_id: str, side: str, case: str, repeat: int, sha: str, settings: RunSettings,
            command: list[str] | tuple[str, ...] = ()) -> str:
    """Deterministic 20-hex key of one run: a hash of everything that identifies it, the bench
    command included (``plan.integrity``)."""
    identity = {
        "sweep_id": sweep_id, "side": side, "case": case, "repeat": repeat, "sha": sha,
        "variant": settings.variant, "params": settings.params, "env": settings.env,
        "command": command_digest(command),
    }
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:20]


def planned_cases(spec: SweepSpec) -> list[str]:
    """The cases the plan runs: the sweep's, or for a suite protocol the one suite run
    (``capabilities.SUITE_CASE``) whose output gives every case ``spec.cases`` names."""
    return [SUITE_CASE] if is_suite(spec) else list(spec.cases)


def build_plan(resolved: ResolvedSweep, sweep_id: str) -> list[PlannedRun]:
    """The sweep's first ``repeats`` rounds in execution order, each run with its ``order`` index and
    ``run_key``: all of a fixed sweep, the part of an adaptive one that always runs."""
    spec = resolved.spec
    cells = plan_cells(planned_cases(spec), list(spec.sides), spec.repeats, spec.order, spec.order_seed)
    return _runs(resolved, sweep_id, cells)


def adaptive_plan(resolved: ResolvedSweep, sweep_id: str) -> list[PlannedRun]:
    """Every run an adaptive sweep may add after its first ``repeats`` rounds (rounds ``repeats`` to
    ``max_repeats - 1``), round by round in the sweep's order, numbered on after ``build_plan``'s runs.

    The rounds extend the same design (the same seed draws the same first rounds), so keys and order
    indices are the same whenever the sweep is planned again; the adaptive loop runs a subset."""
    spec = resolved.spec
    cells = plan_cells(planned_cases(spec), list(spec.sides), spec.max_rounds, spec.order, spec.order_seed)
    extra = sorted((cell for cell in cells if cell[2] >= spec.repeats), key=lambda cell: cell[2])
    first = len(planned_cases(spec)) * len(spec.sides) * spec.repeats
    return _runs(resolved, sweep_id, extra, first)


def _runs(resolved: ResolvedSweep, sweep_id: str, cells: list[Cell], first_order: int = 0
          ) -> list[PlannedRun]:
    spec = resolved.spec
    json_mapping = vars(spec.json) if spec.json is not None else {}
    runs = []
    for index, (case, side, repeat) in enumerate(cells, start=first_order):
        parts = case_parts(case)
        settings = resolved.settings[side]
        sha = resolved.shas[side]
        runs.append(PlannedRun(
            sweep_id=sweep_id, run_key=run_key(sweep_id, side, case, repeat, sha, settings, spec.command),
            order=index,
            side=side, ref=spec.sides[side].ref, sha=sha, case=case, algo=parts and parts.algo,
            task=parts and parts.task, sim=parts and parts.sim, variant=settings.variant, repeat=repeat,
            repo=str(resolved.repo),
            argv_template=run_argv(spec, settings.params),
            params=dict(settings.params),
            env=dict(settings.env), timeout_s=spec.timeout_s, results_root=str(resolved.results_root),
            pythonpath=tuple(spec.pythonpath),
            protocol=spec.protocol.value, json_mapping=dict(json_mapping),
            audit_modules=None if spec.audit_modules is None else tuple(spec.audit_modules),
            prepare=tuple(tuple(argv) for argv in spec.prepare),
            sweep_dir=str(resolved.sweep_dir or resolved.repo), submodules=spec.submodules,
            suite_cases=tuple(spec.cases) if case == SUITE_CASE else (),
            lockstep=lockstep_settings(spec, settings.params),
            instrument=instrument_settings(spec, settings.params),
            quiet=QuietLimits(**vars(spec.quiet)) if spec.quiet is not None else None,
            max_steps=spec.max_steps, max_result_mib=spec.max_result_mib,
            python=spec.sides[side].python or spec.python,
        ))
    return runs


def run_argv(spec: SweepSpec, params: dict) -> tuple[str, ...]:
    """A run's argv template: the sweep's command, and in a lockstep sweep envruntime's with its control
    option, or a suite's as ``orchestrator.suitekit`` runs it on the control channel."""
    lockstep = spec.order is Order.lockstep
    driver = describe(spec.protocol.value).suite_driver if lockstep else None
    if driver is not None:
        return driver.render(spec.command, driver.lockstep)
    return bench_argv(spec.command, params, lockstep=lockstep)


def lockstep_settings(spec: SweepSpec, params: dict) -> LockstepSettings | None:
    """A run's ``lockstep`` settings (``contract.PlannedRun``): the sweep's blocks and fallback, the
    argv template without the control option where the plan added it (envruntime's command), and a
    suite's command that runs only its fallen-back cases."""
    if spec.order is not Order.lockstep or spec.lockstep is None:
        return None
    plain = bench_argv(spec.command, params)
    blocks = spec.lockstep
    driver = describe(spec.protocol.value).suite_driver
    return LockstepSettings(
        block_steps=blocks.block_steps, blocks=blocks.blocks, block_warmup=blocks.block_warmup,
        fallback=blocks.fallback.value, step_ms=blocks.step_ms,
        plain_argv=tuple(plain) if plain != bench_argv(spec.command, params, lockstep=True) else None,
        select_argv=driver.render(spec.command, driver.select) if driver else None)


def instrument_settings(spec: SweepSpec, params: dict) -> InstrumentSettings | None:
    """A run's ``instrument`` settings: the command its instrumented process runs (a suite's through
    ``orchestrator.suitekit``, on the control channel, whatever the order) and whether its bench side
    marks the measured steps."""
    if spec.instrument is Instrument.none:
        return None
    driver = describe(spec.protocol.value).suite_driver
    argv = driver.render(spec.command, driver.lockstep) if driver else run_argv(spec, params)
    return InstrumentSettings(argv=tuple(argv), marks=marks_steps(spec))
