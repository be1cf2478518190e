"""The bench's environment, built the same way on every path (embedded cluster or ``shasweep worker``).

Base: the worker's own environment without what a Dask nanny injects into the processes it spawns
(``MALLOC_TRIM_THRESHOLD_``, ``PYTHONHASHSEED``; the embedded cluster has a nanny, ``shasweep
worker`` has none), so one SHA measures under the same malloc settings and hash seeds on both
paths. On top: the sweep's ``pythonpath`` directories of the worktree (default: the worktree
itself) first on ``PYTHONPATH``, the pinned thread variables, the sweep's ``env`` (a sweep's
``PYTHONPATH`` is appended after the worktree directories, never replacing them), the run key and
the round's str-hash seed: ``PYTHONHASHSEED`` as the sweep's ``env`` sets it, else one drawn from
the sweep and the round (``round_hash_seed``), the same for every side of a round.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from orchestrator.contract import RUN_KEY_VAR, PlannedRun
from orchestrator.errors import InvalidInputError
from orchestrator.worker.hostinfo import PINNED_THREAD_VARS

HASH_SEED_VAR = "PYTHONHASHSEED"
# a nanny sets PYTHONHASHSEED=6640 where it is unset or 0, for every worker it spawns
NANNY_INJECTED_VARS: tuple[str, ...] = ("MALLOC_TRIM_THRESHOLD_", HASH_SEED_VAR)
HASH_SEEDS = 4294967295  # PYTHONHASHSEED takes 0 (no randomisation) to 4294967295


def base_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The worker's environment without the variables only a nanny-spawned worker has."""
    env = dict(os.environ if environ is None else environ)
    for name in NANNY_INJECTED_VARS:
        env.pop(name, None)
    return env


def bench_pythonpath(first: Sequence[str | Path], sweep: str | None, inherited: str | None) -> str:
    """``PYTHONPATH`` of the bench: ``first`` (the worktree, then any worktree-relative dirs), then the
    sweep's own ``env.PYTHONPATH``, then the worker's; empty entries dropped."""
    later = [p for text in (sweep, inherited) if text for p in text.split(os.pathsep)]
    parts = [str(p) for p in first] + later
    return os.pathsep.join(p for p in parts if p)


def worktree_dirs(tree: Path, directories: Sequence[str]) -> list[str]:
    """The sweep's ``pythonpath`` directories inside the worktree ``tree``, absolute, in order; each must
    exist there (``InvalidInputError`` naming the first that does not, or that leaves the worktree)."""
    root = tree.resolve()
    paths = []
    for directory in directories:
        path = (root / directory).resolve()
        if not path.is_relative_to(root):
            raise InvalidInputError(f"pythonpath directory {directory!r} leads out of the worktree {root}")
        if not path.is_dir():
            raise InvalidInputError(
                f"pythonpath directory {directory!r} does not exist in the worktree {root}")
        paths.append(str(path))
    return paths


def round_hash_seed(sweep_id: str, repeat: int) -> str:
    """The str-hash seed of round ``repeat`` of the sweep, every side's (1 to ``HASH_SEEDS``): the layout
    of a dict or set keyed by str, where its keys collide, is then the same for the sides of a round,
    while it differs from round to round as it does between a user's processes."""
    digest = hashlib.sha256(f"{sweep_id}/{repeat}".encode()).digest()
    return str(1 + int.from_bytes(digest[:8], "big") % HASH_SEEDS)


def chosen_hash_seed(run: PlannedRun) -> str | None:
    """``PYTHONHASHSEED`` as the sweep's ``env`` sets it for ``run``; None where it does not."""
    value = run.env.get(HASH_SEED_VAR)
    return None if value is None else str(value)


def bench_env(run: PlannedRun, tree: Path, threads: int,
              environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The bench's environment (see the module docstring)."""
    env = base_env(environ)
    inherited = env.get("PYTHONPATH")
    sweep_env = {str(k): str(v) for k, v in run.env.items()}
    env.update({name: str(threads) for name in PINNED_THREAD_VARS})
    env.update(sweep_env)
    first = worktree_dirs(tree, run.pythonpath)
    env["PYTHONPATH"] = bench_pythonpath(first, sweep_env.get("PYTHONPATH"), inherited)
    env[RUN_KEY_VAR] = run.run_key
    env[HASH_SEED_VAR] = chosen_hash_seed(run) or round_hash_seed(run.sweep_id, run.repeat)
    return env
