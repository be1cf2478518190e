"""Helpers for sweeps of a generated foreign repository (examples/make_demo_repo.py): it knows
nothing of shasweep, and its benches live outside its history (in examples/ or a tmp dir)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
sys.path.insert(0, str(EXAMPLES))
from make_demo_repo import git, make_demo_repo  # noqa: E402

__all__ = ["EXAMPLES", "git", "make_demo_repo", "shasweep", "write_sweep"]


def shasweep(*args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess:
    """``python -m orchestrator.cli ARGS`` as a real process (embedded LocalCluster; ``run`` without its
    progress lines)."""
    env = {**os.environ, "SHASWEEP_HOME": str(home),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    quiet = ["--no-progress"] if args[0] == "run" else []
    return subprocess.run([sys.executable, "-m", "orchestrator.cli", *args, *quiet], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=900)


def write_sweep(path: Path, base: Path, **changes: object) -> Path:
    """The sweep YAML ``base`` with top-level keys replaced, written to ``path``."""
    data = yaml.safe_load(base.read_text())
    data.update(changes)
    path.write_text(yaml.safe_dump(data))
    return path
