"""Where a suite's interpreter finds ``orchestrator.suitekit`` (docs/design.md, "Suites in lockstep"):
the sweep's ``python`` may be a virtual environment without shasweep, so the worker keeps a copy of
the few modules a suite's process imports of it (``orchestrator/__init__.py``, ``benchkit``,
``suitekit``: the standard library, pytest and pyperf only) in ``$SHASWEEP_HOME/suitekit/<digest>/``
and puts that directory last on the bench's ``PYTHONPATH``: after the worktree and every other entry,
so it never shadows anything of the bench's own.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from orchestrator.worker.worktrees import shasweep_home

PACKAGE = Path(__file__).resolve().parents[1]  # the orchestrator package the worker runs
KIT = ("__init__.py", "benchkit", "suitekit")  # what a suite's process imports of it


def kit_files(package: Path = PACKAGE) -> list[Path]:
    """The kit's source files, relative to the package."""
    found = []
    for name in KIT:
        path = package / name
        found += [path] if path.is_file() else sorted(path.glob("*.py"))
    return [path.relative_to(package) for path in found]


def kit_dir(package: Path = PACKAGE, home: Path | None = None) -> Path:
    """The directory that holds ``orchestrator/`` with the kit, made once per version of its sources."""
    files = kit_files(package)
    digest = hashlib.sha256()
    for relative in files:
        digest.update(str(relative).encode() + b"\0" + (package / relative).read_bytes() + b"\0")
    target = (home or shasweep_home()) / "suitekit" / digest.hexdigest()[:16]
    if (target / "orchestrator").is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".kit-", dir=target.parent))
    for relative in files:
        destination = staging / "orchestrator" / relative
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(package / relative, destination)
    try:
        staging.rename(target)
    except OSError:  # another worker made it meanwhile
        shutil.rmtree(staging, ignore_errors=True)
    return target


def with_kit(env: dict[str, str]) -> dict[str, str]:
    """``env`` with the kit's directory last on ``PYTHONPATH``."""
    entries = [entry for entry in env.get("PYTHONPATH", "").split(os.pathsep) if entry]
    return {**env, "PYTHONPATH": os.pathsep.join([*entries, str(kit_dir())])}
