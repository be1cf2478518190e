"""The command line starts light: what a command does not use, it does not import.

A property, not a time (``benchmarks/cli_startup.py`` measures the time): each check runs in a fresh
interpreter and lists ``sys.modules`` after the command.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

# The analysis, plotting, Dask and typed-record stacks: each costs from tens of milliseconds to seconds.
HEAVY: tuple[str, ...] = ("ruptures", "scipy", "pandas", "pyarrow", "bokeh", "dask", "distributed", "rich",
                          "numpy", "pydantic")
# Not even the sweep YAML's parser for commands that read no sweep file.
SPEC_STACK: tuple[str, ...] = ("omegaconf", "yaml")


def imported(code: str, cwd=None) -> set[str]:
    """Every module in ``sys.modules`` after running ``code`` in a fresh interpreter."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=cwd, timeout=120)
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.splitlines()[-1]))


def loaded_modules(code: str, cwd=None) -> set[str]:
    """The top-level packages in ``sys.modules`` after running ``code`` in a fresh interpreter."""
    return {name.split(".")[0] for name in imported(code, cwd)}


def command(*argv: str) -> str:
    """Code that runs ``shasweep ARGV`` in-process and keeps going whatever it returns."""
    return f"from orchestrator.cli.main import main\nmain({list(argv)!r})"


def test_importing_the_cli_loads_nothing_heavy():
    loaded = loaded_modules("import orchestrator.cli")
    assert not loaded & {*HEAVY, *SPEC_STACK}, sorted(loaded & {*HEAVY, *SPEC_STACK})


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["plan", "--help"], ["run", "--help"],
                                  ["try", "--help"], ["list", "--help"], ["ci", "--help"],
                                  ["comment", "--help"]])
def test_help_and_version_load_nothing_heavy(argv):
    loaded = loaded_modules(command(*argv))
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


def test_ci_plan_and_locate_load_only_the_spec_stack(tmp_path):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
    from make_ci_repo import make_ci_repo

    make_ci_repo(tmp_path / "repo")
    for argv in (["ci", "--plan", "--base", "main", "--head", "slower"], ["ci", "--locate"]):
        succeeded = f"from orchestrator.cli.main import main\nassert main({argv!r}) == 0"
        loaded = loaded_modules(succeeded, cwd=tmp_path / "repo")
        assert not loaded & set(HEAVY), (argv, sorted(loaded & set(HEAVY)))


def test_list_on_an_empty_root_reads_no_sweep_file_stack(tmp_path):
    loaded = loaded_modules(command("list", "--results", str(tmp_path)))
    assert not loaded & {*HEAVY, *SPEC_STACK}, sorted(loaded & {*HEAVY, *SPEC_STACK})


def test_plan_without_earlier_results_loads_only_the_spec_stack(repo, tmp_path):
    sweep = {"name": "light", "cases": ["one"], "sides": {"old": {"ref": "HEAD~1"}, "new": {"ref": "HEAD"}},
             "baseline": "old", "protocol": "time", "command": ["{python}", "-c", "pass"],
             "gates": [{"metric": "wall_ms", "max_ratio": 1.05}], "results": str(tmp_path / "results")}
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(sweep))
    loaded = loaded_modules(command("plan", str(path)), cwd=repo.path)
    assert "omegaconf" in loaded, "the probe ran the plan"
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))



STATISTICS_PROBE = """
import numpy as np
from orchestrator.analysis import stats, rank_tests
from orchestrator.analysis.sequential import Looks, rounds_to_decide
from orchestrator.analysis.verdicts import detectable
from orchestrator.spec.schema import GateSpec
rng = np.random.default_rng(0)
cand, base = rng.lognormal(0, 0.1, 9), rng.lognormal(0.05, 0.1, 9)
paired, unpaired = stats.compare(cand, base, paired=True), stats.compare(cand, base)
assert np.isfinite([paired.p_value, paired.low, unpaired.p_value, unpaired.low]).all()
assert detectable(paired, GateSpec(metric="throughput", min_ratio=0.97), Looks(3, 30))[0] is not None
assert rounds_to_decide(0.07, 0.03, Looks(3, 30), 0.05, True)
assert 0 <= rank_tests.kruskal_p([cand, base, cand * 1.1]) <= 1
"""


def test_intervals_rank_tests_and_power_do_not_import_scipy_stats():
    """``scipy.stats`` costs over a second of start-up, which every report and every sweep's client
    paid: t and normal quantiles come from ``scipy.special``, the rank tests from ``analysis.rank_tests``."""
    modules = imported(STATISTICS_PROBE)
    assert "scipy.special" in modules, "the probe ran"
    assert not {m for m in modules if m == "scipy.stats" or m.startswith("scipy.stats.")}
