"""Instruction counts under valgrind's callgrind (``instrument: valgrind``): the bench side's client
requests count only the measured calls and dump each block (``benchkit.callgrind``), the worker reads
the dumps (``worker.instrumented``), a whole process tree is counted for protocol time; counts of
different fingerprints are never compared, and a case whose count and time disagree is named. Real
valgrind processes: counts do not depend on the host's load."""

from __future__ import annotations

import math
import shutil
import subprocess
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest
from fakebench.fakerepo import make_fake_repo, make_run
from fakebench.suite_repo import LIBRARY

from orchestrator.analysis.instructions import disagreements, fingerprint_problem
from orchestrator.analysis.report_model import MetricRow
from orchestrator.analysis.stats import Comparison, summarize
from orchestrator.contract import InstrumentSettings
from orchestrator.errors import SpecError
from orchestrator.worker.instrumented import Dump, block_counts, callgrind_argv, instrumented_env, read_dumps

ROOT = Path(__file__).resolve().parents[2]
needs_valgrind = pytest.mark.skipif(shutil.which("valgrind") is None,
                                    reason="valgrind (Debian package valgrind) is not installed")
MARKED = '''
import sys
from orchestrator.benchkit.callgrind import marks
''' + LIBRARY + '''
mark = marks()
spin(1000)  # not counted: outside the marks
for block, n in enumerate(int(a) for a in sys.argv[1:]):
    for _ in range(2):
        mark.start()
        spin(n)
        mark.stop()
    mark.dump(f"shasweep block {block}")
'''


@needs_valgrind
def test_client_requests_count_only_the_marked_calls_and_dump_each_block(tmp_path):
    (tmp_path / "marked.py").write_text(textwrap.dedent(MARKED))
    env = instrumented_env({"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)})
    argv = callgrind_argv(tmp_path, marks=True) + [sys.executable, "marked.py", "20000", "20000", "20200"]
    done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    counts = block_counts(read_dumps(tmp_path))
    assert sorted(counts) == [0, 1, 2]
    assert abs(counts[1] / counts[0] - 1) < 1e-4, "the same work counts the same (within 0.01 %)"
    assert counts[2] / counts[0] == pytest.approx(1.01, abs=1e-3), "1 % more work: 1 % more instructions"
    assert counts[0] > 2 * 20000 * 50, "the loop's instructions, two steps of it"


def test_a_block_s_count_is_its_calls_less_its_steps_fixed_part():
    """The bench side counts as many steps of no calls before a measured block (its ``fixed`` dump);
    a block without one (a v1 bench, a target that cannot make no calls) keeps its whole count."""
    request = "Client Request: shasweep block"
    dumps = [Dump(f"{request} 3 fixed", 64_000), Dump(f"{request} 3", 64_000 + 2 * 5 * 17_500_000),
             Dump(f"{request} 4", 1_000), Dump("Program termination", 9_999_999)]
    assert block_counts(dumps) == {3: 2 * 5 * 17_500_000, 4: 1_000}


@needs_valgrind
def test_protocol_time_counts_the_whole_process_tree(tmp_path, monkeypatch):
    monkeypatch.setenv("SHASWEEP_HOME", str(tmp_path / "home"))
    repo = make_fake_repo(tmp_path)
    from orchestrator.worker.bench_task import execute_run

    found = {}
    for n in (20000, 40000):
        child = f"import subprocess, sys; subprocess.run([sys.executable, '-c', 'sum(range({n}))'])"
        command = ("{python}", "-c", child)
        run = replace(make_run(repo, repo.shas[0], results_root=tmp_path / "results", command=command,
                               params={}, sweep_id=f"t{n}"),
                      protocol="time", params={"measure": 1}, audit_modules=(),
                      instrument=InstrumentSettings(argv=command, marks=False))
        outcome = execute_run(run)
        assert outcome.status == "ok", outcome.error
        row = pd.read_parquet(outcome.runs_file).iloc[0]
        assert row["host_valgrind"].startswith("valgrind-") and "CPython" in row["host_interpreter"]
        found[n] = row["instructions"]
    # both counts hold two interpreters' start-up (the child counted too); their difference is the work
    assert found[40000] - found[20000] > 20000 * 10 and found[20000] > 50e6


def test_counts_of_different_fingerprints_are_never_compared():
    one = {"host_valgrind": "valgrind-3.19.0", "host_cpu_model": "AMD EPYC",
           "host_interpreter": "CPython 3.11.7"}
    runs = pd.DataFrame([{**one, "instructions": 1e6}, {**one, "instructions": 1.1e6},
                         {**one, "instructions": None, "host_valgrind": "valgrind-3.22.0"}])
    assert fingerprint_problem(runs) is None, "a run without a count has no say"
    newer = {**one, "host_valgrind": "valgrind-3.22.0", "instructions": 1e6}
    other = pd.concat([runs, pd.DataFrame([newer])])
    problem = fingerprint_problem(other)
    assert problem is not None and "valgrind-3.19.0 | AMD EPYC" in problem and "valgrind-3.22.0" in problem


def _row(metric: str, ratio: float, low: float, high: float) -> MetricRow:
    comparison = Comparison(ratio=ratio, low=low, high=high, p_value=math.nan, n_candidate=5, n_baseline=5,
                            paired=True, confidence=0.95, method="test")
    return MetricRow("c", "new", metric, summarize([1.0]), ratio, comparison)


def test_a_case_whose_count_and_time_disagree_is_named_either_way():
    time_moved_counts_flat = [_row("time_ms", 1.08, 1.03, 1.13), _row("instructions", 1.0001, 1.0, 1.0002)]
    (flag,) = disagreements(time_moved_counts_flat, "old")
    assert "time_ms moved" in flag.says and "stayed flat" in flag.says
    counts_moved_time_flat = [_row("time_ms", 1.01, 0.95, 1.07), _row("instructions", 1.02, 1.02, 1.02)]
    assert "the instructions moved" in disagreements(counts_moved_time_flat, "old")[0].says
    agree = [_row("time_ms", 1.05, 1.02, 1.08), _row("instructions", 1.05, 1.05, 1.05)]
    assert disagreements(agree, "old") == []


def test_valgrind_missing_is_bad_input_naming_the_package(tmp_path, monkeypatch):
    from orchestrator.spec.instrument_checks import check_instrument
    from orchestrator.spec.schema import Instrument, SweepSpec

    monkeypatch.setenv("PATH", str(tmp_path))  # no valgrind on it
    spec = SweepSpec(name="x", instrument=Instrument.valgrind)
    with pytest.raises(SpecError, match="valgrind is not installed on this host .* apt-get install valgrind"):
        check_instrument(spec)
