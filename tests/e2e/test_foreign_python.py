"""Benchmarking another repository in its own interpreter: real ``shasweep run`` processes whose
benches run in virtual environments made here (``python -m venv --without-pip``) that hold none of
shasweep's dependencies, one per side, on the generated example repositories (examples/)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyperf
import pytest
from anyrepo_helpers import EXAMPLES, shasweep

from orchestrator.errors import EXIT_GATE_FAILED, EXIT_GATE_INCONCLUSIVE, EXIT_OK

sys.path.insert(0, str(EXAMPLES))
from make_demo_repo import make_demo_repo  # noqa: E402
from make_suite_repo import make_suite_repo  # noqa: E402

pytestmark = pytest.mark.slow
DECIDED = (EXIT_OK, EXIT_GATE_FAILED, EXIT_GATE_INCONCLUSIVE)  # the gates' verdict, not a failed run


def make_venv(where: Path, *packages: Path) -> Path:
    """A virtual environment without pip (nothing of shasweep's), with copies of ``packages``."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True, timeout=300)
    python = where / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True, timeout=60).stdout.strip()
    for package in packages:
        shutil.copytree(package, Path(site) / package.name)
    lacks = subprocess.run([str(python), "-c", "import numpy"], capture_output=True, timeout=60)
    assert lacks.returncode != 0, "the environment holds none of shasweep's dependencies"
    return where


def first_argv(log_dir: str) -> str:
    return (Path(log_dir) / "argv.txt").read_text().splitlines()[0]


def test_a_json_sweep_runs_each_side_in_its_own_environment(tmp_path):
    repo = tmp_path / "demo"
    make_demo_repo(repo)
    old, new = make_venv(tmp_path / "env-old"), make_venv(tmp_path / "env-new")
    results = tmp_path / "results"
    proc = shasweep("run", str(EXAMPLES / "json" / "sweep.yaml"), f"repo={repo}", f"results={results}",
                    "repeats=2", f"sides.new.python={new}", "--python", str(old), cwd=tmp_path,
                    home=tmp_path / "home")
    assert proc.returncode in DECIDED, proc.stdout + proc.stderr
    runs = pd.read_parquet(results / "runs")
    assert (runs["status"] == "ok").all() and len(runs) == 4, runs[["side", "status", "error"]]
    for side, env in (("old", old), ("new", new)):
        mine = runs[runs["side"] == side]
        assert set(mine["python"]) == {str(env / "bin" / "python")}
        assert {first_argv(d) for d in mine["log_dir"]} == {str(env / "bin" / "python")}
        version = subprocess.run([str(env / "bin" / "python"), "-c", "import platform; "
                                  "print(platform.python_version())"], capture_output=True, text=True).stdout
        assert set(mine["host_python"]) == {version.strip()}


def test_a_pyperf_suite_runs_in_an_environment_with_only_pyperf(tmp_path):
    repo = tmp_path / "suite"
    make_suite_repo(repo)
    env = make_venv(tmp_path / "env", Path(pyperf.__file__).parent)
    results = tmp_path / "results"
    proc = shasweep("run", str(EXAMPLES / "pyperf" / "sweep.yaml"), f"repo={repo}", f"results={results}",
                    "repeats=2", f"python={env}", cwd=tmp_path, home=tmp_path / "home")
    assert proc.returncode in DECIDED, proc.stdout + proc.stderr
    runs = pd.read_parquet(results / "runs")
    assert (runs["status"] == "ok").all() and set(runs["case"]) == {"checksum", "tokenize", "sort_words"}
    assert set(runs["python"]) == {str(env / "bin" / "python")}
    assert {first_argv(d) for d in runs["log_dir"]} == {str(env / "bin" / "python")}
    make_demo_repo(tmp_path / "demo")
    tried = shasweep("try", str(EXAMPLES / "time" / "sweep.yaml"), f"repo={tmp_path / 'demo'}", "--python",
                     str(env), cwd=tmp_path, home=tmp_path / "home")
    assert tried.returncode == EXIT_OK, tried.stdout + tried.stderr
