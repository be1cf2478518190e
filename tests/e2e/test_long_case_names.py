"""A pytest-benchmark suite whose case names are long (as a real suite's parametrized node ids are:
python-attrs/cattrs' 64 benchmarks crashed the worker) in a real lockstep `shasweep run`: its
``cases`` command holds far more than one atomic FIFO write, and one benchmark's name alone is
longer than that, so its calibration and block commands are too. Every case is played in lockstep
on both sides and the sweep reaches its verdict."""

from __future__ import annotations

import select
import sys

import pandas as pd
import pytest
import yaml
from anyrepo_helpers import EXAMPLES, shasweep

sys.path.insert(0, str(EXAMPLES))
from make_suite_repo import make_suite_repo  # noqa: E402

pytestmark = pytest.mark.slow

SUITE = '''"""suitelib's checksum under long parametrized names."""
import pytest
import suitelib

IDS = {ids}


@pytest.mark.parametrize("n", range(len(IDS)), ids=IDS)
def test_long(benchmark, n):
    benchmark(suitelib.checksum)
'''
# 30 names of ~150 characters (~5 kB of node ids together) and one of 5,000 on its own
IDS = [f"structure-{i:02d}-" + "unstructure_and_structure_a_nested_attrs_class_" * 3 for i in range(30)]
IDS.append("a-single-name-longer-than-one-atomic-write-" + "x" * 5000)


def test_a_suite_whose_case_names_exceed_an_atomic_fifo_write_runs_in_lockstep(tmp_path):
    repo = tmp_path / "suite-repo"
    make_suite_repo(repo)
    (tmp_path / "test_long.py").write_text(SUITE.format(ids=repr(IDS)))
    names = [f"test_long.py::test_long[{name}]" for name in IDS]
    assert len("".join(names)) > 2 * select.PIPE_BUF and len(names[-1]) > select.PIPE_BUF
    sweep = {"name": "long-names", "sides": {"old": {"ref": "HEAD"}, "new": {"ref": "HEAD"}}, "aa": True,
             "baseline": "old", "cases": "discover", "protocol": "pytest-benchmark", "order": "lockstep",
             "repeats": 1, "lockstep": {"blocks": 2, "block_steps": 2, "step_ms": 1},
             "command": ["{python}", "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir={sweep_dir}",
                         "{sweep_dir}/test_long.py", "--benchmark-json={result}"],
             "gates": [{"metric": "time_ms", "max_ratio": 5.0}]}
    (tmp_path / "sweep.yaml").write_text(yaml.safe_dump(sweep))
    results = tmp_path / "results"
    proc = shasweep("run", str(tmp_path / "sweep.yaml"), f"repo={repo}", f"results={results}", cwd=tmp_path,
                    home=tmp_path / "home")
    output = proc.stdout + proc.stderr
    assert "Traceback" not in output and "AssertionError" not in output, output
    runs = pd.read_parquet(results / "runs")
    assert (runs["status"] == "ok").all(), runs[["case", "error"]].to_string()
    assert set(runs["ran_in"]) == {"lockstep"} and len(runs) == 2 * len(IDS), output
    assert runs.groupby("side")["case"].nunique().eq(len(IDS)).all()
    assert proc.returncode in (0, 4), output
    assert not list((tmp_path / "home" / "logs").rglob("control.fifo*")), "the FIFO and its files removed"
