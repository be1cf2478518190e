"""The header's ``audit``: which code, which libraries and which thread settings a run used.

It lets a sweep prove that each side really imported its own SHA's source tree.
"""

from __future__ import annotations

import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

import numba
import torch

import envruntime
from envruntime.envs.vecenv import VecEnv

# audit key -> distribution name; mujoco_warp is listed only when installed.
VERSIONED_DISTRIBUTIONS: dict[str, str] = {
    "numpy": "numpy",
    "torch": "torch",
    "mujoco": "mujoco",
    "motrixsim": "motrixsim",
    "numba": "numba",
}
OPTIONAL_DISTRIBUTIONS: dict[str, str] = {"mujoco_warp": "mujoco-warp"}
THREAD_ENV_VARS: tuple[str, ...] = (
    "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS",
    "NUMBA_THREADING_LAYER", "OMP_WAIT_POLICY", "ENVRUNTIME_SERIAL_KERNELS", "ENVRUNTIME_KERNEL_THREADS",
)
GIT_TIMEOUT_S = 10


def qualified_name(obj: object) -> str:
    """``module.QualName`` of ``obj``'s class."""
    cls = type(obj)
    return f"{cls.__module__}.{cls.__qualname__}"


def git_sha(source_root: Path) -> str | None:
    """HEAD of the git work tree whose top level is exactly ``source_root``; None otherwise."""
    try:
        top = subprocess.run(["git", "rev-parse", "--show-toplevel", "HEAD"], cwd=source_root,
                             capture_output=True, text=True, timeout=GIT_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = top.stdout.split()
    if top.returncode != 0 or len(lines) != 2 or Path(lines[0]).resolve() != source_root.resolve():
        return None
    return lines[1]


def _version(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def package_versions() -> dict[str, str | None]:
    """Python and library versions; optional engines appear only when installed."""
    versions: dict[str, str | None] = {"python": platform.python_version()}
    versions.update({key: _version(dist) for key, dist in VERSIONED_DISTRIBUTIONS.items()})
    for key, dist in OPTIONAL_DISTRIBUTIONS.items():
        if (version := _version(dist)) is not None:
            versions[key] = version
    return versions


def _numba_layer() -> str | None:
    """Numba's threading layer, or None if no parallel kernel has run in this process yet."""
    try:
        return numba.threading_layer()
    except ValueError:
        return None


def thread_settings(env: VecEnv) -> dict[str, Any]:
    """Effective thread counts of torch, Numba and the backend, the env vars, and the affinity; the
    row kernels' policy and the counts it may use (each step's is in the summary's ``kernel_threads``)."""
    settings: dict[str, Any] = {
        "torch": torch.get_num_threads(),
        "numba": numba.get_num_threads(),
        "numba_layer": _numba_layer(),
        "backend": getattr(env.backend, "threads", None),
        "kernel_policy": env.kernel_threads.policy,
        "kernel_rungs": list(env.kernel_threads.rungs),
    }
    settings.update({name: os.environ.get(name) for name in THREAD_ENV_VARS})
    settings["affinity"] = sorted(os.sched_getaffinity(0))
    return settings


def build_audit(env: VecEnv, collector: dict[str, Any] | None = None) -> dict[str, Any]:
    """The header's ``audit`` record for a run on ``env``; ``collector`` is the policy's audit
    (``actions``, ``device``, ``device_name``, ...)."""
    package_file = Path(envruntime.__file__)
    return {
        "module_file": str(package_file),
        "git_sha": git_sha(package_file.parent.parent),
        "env_class": qualified_name(env),
        "backend_class": qualified_name(env.backend),
        "managers": list(env.manager_names),
        "versions": package_versions(),
        "threads": thread_settings(env),
        "collector": collector or {},
    }
