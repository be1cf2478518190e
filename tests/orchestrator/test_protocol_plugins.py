"""A protocol of a third party: a package that registers a ``ProtocolPlugin`` in the entry-point group
``shasweep.protocols`` is a protocol the spec accepts, the capabilities describe, and the worker reads
runs with, like a built-in one (docs/protocols.md, "A protocol of your own").

The package is installed for real: a ``dist-info`` with an ``entry_points.txt`` in a directory put on
``sys.path``, found by ``importlib.metadata`` as pip's installs are."""

from __future__ import annotations

import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest
import yaml
from fakebench.fakerepo import make_run

from orchestrator import capabilities
from orchestrator.capabilities import BUILTIN_PROTOCOLS, UnknownProtocolError, describe, registered
from orchestrator.cli.main import main
from orchestrator.errors import EXIT_INVALID, SpecError
from orchestrator.spec.load import load_spec
from orchestrator.worker.bench_task import execute_run
from orchestrator.worker.protocols import reader_class

# The third party's package: its plugin (declaration + reader path) and its reader, which takes one
# number per line of {result} as a step's time.
PLUGIN = '''
from orchestrator.capabilities import Capability, ProtocolInfo, ProtocolPlugin


def declare(mapping):
    return ProtocolInfo("lines", Capability.STEPS | Capability.RESULT_DOCUMENT, phases=("line_ms",),
                        metrics=(), throughput_unit="lines")


PLUGIN = ProtocolPlugin("lines", declare, "shasweep_lines.reader:LinesReader")
NOT_A_PLUGIN = "lines"
'''
READER = '''
import time
from statistics import fmean

from orchestrator.contract import StepRecord
from orchestrator.worker.protocols import BenchReader


class LinesReader(BenchReader):
    """Waits for the command; then each line of {result} is one step's time in ms."""

    protocol = "lines"

    def execute(self, start, stop, on_step):
        proc = start()
        while not stop.should_stop(proc):
            time.sleep(0.02)
        return None

    def complete(self):
        try:
            values = [float(line) for line in self.result_path.read_text().split()]
        except (OSError, ValueError) as exc:
            return f"lines: {self.result_path}: {exc}"
        for step, value in enumerate(values):
            self.steps.append(StepRecord(step, False, {"line_ms": value}))
        mean = fmean(values)
        self.summary = {"throughput": 1000.0 / mean, "phase_means_ms": {"line_ms": mean}}
        return None
'''
ENTRY_POINTS = """
[shasweep.protocols]
lines = shasweep_lines:PLUGIN
broken = shasweep_missing:PLUGIN
json = shasweep_lines:PLUGIN
wrong = shasweep_lines:NOT_A_PLUGIN
"""
BENCH = "import sys; open(sys.argv[1], 'w').write('2.0\\n4.0\\n3.0\\n')"


@pytest.fixture
def installed(tmp_path, monkeypatch) -> Path:
    """The package ``shasweep-lines`` installed into a directory on ``sys.path``."""
    site = tmp_path / "site"
    package = site / "shasweep_lines"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(textwrap.dedent(PLUGIN))
    (package / "reader.py").write_text(textwrap.dedent(READER))
    dist = site / "shasweep_lines-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: shasweep-lines\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(ENTRY_POINTS)
    monkeypatch.syspath_prepend(str(site))
    capabilities._entry_points.cache_clear()
    yield site
    capabilities._entry_points.cache_clear()
    for name in [name for name in sys.modules if name.startswith("shasweep_lines")]:
        del sys.modules[name]


def sweep_yaml(directory: Path, **keys) -> Path:
    spec = {"name": "lines", "sides": {"a": {"ref": "HEAD"}}, "baseline": "a", "cases": ["c"],
            "protocol": "lines", "command": ["{python}", "bench.py", "{result}"],
            "gates": [{"metric": "line_ms", "max_ratio": 1.1}]} | keys
    path = directory / "sweep.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def test_a_registered_protocol_is_declared_and_named_beside_the_built_in_ones(installed):
    assert list(registered()) == [*BUILTIN_PROTOCOLS, "lines"], "only the valid entry point is added"
    info = describe("lines")
    assert info.provides == {"throughput", "line_ms"} and info.throughput_unit == "lines"
    assert reader_class("lines").__name__ == "LinesReader"
    assert describe("json").name == "json", "a package cannot replace a built-in protocol"
    with pytest.raises(UnknownProtocolError, match=r"'broken'; known: v1, json, time, pyperf, "
                                                   r"pytest-benchmark, gbench, lines \(entry point broken"
                                                   r" = shasweep_missing:PLUGIN does not load: "
                                                   r"ModuleNotFoundError"):
        describe("broken")
    with pytest.raises(UnknownProtocolError, match="is not a ProtocolPlugin named 'wrong'"):
        describe("wrong")


def test_the_spec_takes_a_registered_protocol_and_checks_gates_against_its_declaration(installed, tmp_path):
    spec = load_spec(sweep_yaml(tmp_path))
    assert spec.protocol.value == "lines" and spec.gates[0].metric == "line_ms"
    with pytest.raises(SpecError, match=r"'step_ms' is not reported by protocol lines under this sweep's "
                                        r"settings; valid: line_ms, throughput"):
        load_spec(sweep_yaml(tmp_path, gates=[{"metric": "step_ms", "max_ratio": 1.1}]))


def test_an_unregistered_protocol_is_bad_input_naming_the_registered_ones(installed, tmp_path, capsys):
    assert main(["plan", str(sweep_yaml(tmp_path, protocol="hyperfine"))]) == EXIT_INVALID
    err = capsys.readouterr().err
    assert "protocol: unknown protocol 'hyperfine'; known: v1, json, time, pyperf, pytest-benchmark, " \
           "gbench, lines" in err and "Traceback" not in err


def test_the_worker_reads_a_real_run_with_the_packages_reader(installed, repo, tmp_path):
    (repo.path / "bench.py").write_text(BENCH)  # beside the sweep: a bench outside the history
    run = replace(make_run(repo, repo.shas[0], results_root=tmp_path / "results"), protocol="lines",
                  argv_template=("{python}", str(repo.path / "bench.py"), "{result}"), params={"threads": 1})
    outcome = execute_run(run)
    assert outcome.status == "ok", outcome.error
    assert outcome.reported == ("line_ms", "throughput") and outcome.throughput == pytest.approx(1000 / 3)
    row = pd.read_parquet(outcome.runs_file).iloc[0]
    assert row["protocol"] == "lines" and row["line_ms"] == 3.0 and row["steps"] == 3
    assert pd.read_parquet(outcome.steps_file)["ms"].tolist() == [2.0, 4.0, 3.0]


def test_without_the_package_its_protocol_is_unknown(tmp_path):
    capabilities._entry_points.cache_clear()
    with pytest.raises(UnknownProtocolError, match="unknown protocol 'lines'; known: v1, json, time"):
        describe("lines")
    assert capabilities.describe_stored("lines").provides is None, "its stored rows still read"
