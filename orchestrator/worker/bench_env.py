"""The bench's environment, built the same way on every path (embedded cluster or ``shasweep worker``).

Base: the worker's own environment without what a Dask nanny injects into the processes it spawns
(``MALLOC_TRIM_THRESHOLD_``; the embedded cluster has a nanny, ``shasweep worker`` has none), so
one SHA measures under the same malloc settings on both paths. On top: the sweep's ``pythonpath``
directories of the worktree (default: the worktree itself) first on ``PYTHONPATH``, the pinned
thread variables, the sweep's ``env`` (a sweep's ``PYTHONPATH`` is appended after the worktree
directories, never replacing them) and the run key.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from orchestrator.contract import RUN_KEY_VAR, PlannedRun
from orchestrator.errors import InvalidInputError
from orchestrator.worker.hostinfo import PINNED_THREAD_VARS

NANNY_INJECTED_VARS: tuple[str, ...] = ("MALLOC_TRIM_THRESHOLD_",)


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
    return env
