"""The interpreter that runs the benches: the sweep's ``python`` key, a side's ``sides.<label>.python``
and ``--python``, checked at load (exit 2 naming the key), a virtual environment's directory taken as
its ``bin/python``, and the interpreter's version recorded with each run."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest
import yaml
from fakebench.fakerepo import make_fake_repo, make_run

from orchestrator.cli.main import main
from orchestrator.errors import EXIT_INVALID, SpecError
from orchestrator.spec.load import load_spec
from orchestrator.worker.bench_task import execute_run
from orchestrator.worker.hostinfo import collect_host, python_version

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Path:
    """A virtual environment without pip (made in about a second) and without shasweep's packages."""
    where = tmp_path_factory.mktemp("venv") / "bench-env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True, timeout=300)
    return where


def sweep_file(tmp_path: Path, **keys: object) -> Path:
    data = yaml.safe_load((EXAMPLES / "json" / "sweep.yaml").read_text()) | keys
    path = tmp_path / "sweeps" / "sweep.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data))
    return path


def test_a_venv_directory_is_its_bin_python_and_a_relative_path_starts_at_the_sweep_file(tmp_path, venv):
    python = str(venv / "bin" / "python")
    assert load_spec(sweep_file(tmp_path, python=str(venv))).python == python
    assert load_spec(sweep_file(tmp_path), [f"python={python}"]).python == python
    relative = os.path.relpath(venv, tmp_path / "sweeps")
    spec = load_spec(sweep_file(tmp_path, python=relative))
    assert spec.python == python, "from the sweep file's directory, links not resolved (the venv's own)"
    sided = load_spec(sweep_file(tmp_path), [f"sides.new.python={venv}"])
    assert sided.python is None and sided.sides["new"].python == python and sided.sides["old"].python is None
    on_path = load_spec(sweep_file(tmp_path, python=Path(sys.executable).name))
    assert os.path.samefile(on_path.python, sys.executable), "a bare name is looked up on PATH"


@pytest.mark.parametrize(("key", "value", "words"), [
    ("python", "/nonexistent/python3", "python: '/nonexistent/python3' does not exist"),
    ("python", "/etc", "python: '/etc' is a directory without bin/python: not a virtual environment"),
    ("python", "{tmp}/plain.txt", "python: '{tmp}/plain.txt' is not an executable file"),
    ("sides.old.python", "no-such-python-anywhere", "sides.old.python: "),
    ("python", "''", "python: must name an interpreter"),
])
def test_a_python_that_is_not_an_interpreter_exits_2_naming_the_key(tmp_path, key, value, words, capsys):
    (tmp_path / "plain.txt").write_text("print('not executable')\n")
    value, words = value.format(tmp=tmp_path), words.format(tmp=tmp_path)
    with pytest.raises(SpecError) as raised:
        load_spec(sweep_file(tmp_path), [f"{key}={value}"])
    assert raised.value.key == key
    repo = make_fake_repo(tmp_path)
    assert main(["plan", str(sweep_file(tmp_path)), f"repo={repo.path}", f"{key}={value}"]) == EXIT_INVALID
    assert words in capsys.readouterr().err


def test_the_python_option_sets_the_key_for_plan_and_refuses_a_resume(tmp_path, venv, capsys, monkeypatch):
    repo = make_fake_repo(tmp_path)
    monkeypatch.chdir(venv.parent)
    assert main(["plan", str(sweep_file(tmp_path)), f"repo={repo.path}", "--python", venv.name]) == 0
    out = capsys.readouterr().out
    assert f"python {venv / 'bin' / 'python'}" in out, "each side's line names its interpreter"
    assert main(["plan", str(sweep_file(tmp_path)), f"repo={repo.path}", "--python", "missing-env"]) == 2
    assert "missing-env' does not exist" in capsys.readouterr().err
    assert main(["run", "--resume", "latest", "--python", str(venv)]) == EXIT_INVALID
    assert "--python goes with a sweep file" in capsys.readouterr().err


def test_the_run_records_the_interpreter_it_ran_on_and_its_version(tmp_path, repo, venv):
    """The bench's ``{python}`` is the venv's: it reports its own ``sys.prefix``, the run's ``python``
    column names the interpreter and ``host_python`` its version (asked of it, not of shasweep's)."""
    python = str(venv / "bin" / "python")
    prefix = tmp_path / "prefix.txt"
    code = f"import sys, pathlib; pathlib.Path({str(prefix)!r}).write_text(sys.prefix)"
    run = replace(make_run(repo, repo.shas[0], results_root=tmp_path / "results", params={"measure": 1}),
                  protocol="time", case="prefix", algo=None, task=None, sim=None, audit_modules=(),
                  argv_template=("{python}", "-c", code), python=python)
    outcome = execute_run(run)
    assert outcome.status == "ok", outcome.error
    assert prefix.read_text() == str(venv)
    row = pd.read_parquet(outcome.runs_file).iloc[0]
    assert row["python"] == python and row["host_python"] == python_version(python)
    own = replace(run, python=None, run_key=run.run_key + "-own")
    row = pd.read_parquet(execute_run(own).runs_file).iloc[0]
    assert pd.isna(row["python"]) and row["host_python"] == platform.python_version()
    assert prefix.read_text() == sys.prefix, "unset: shasweep's own interpreter"


def test_the_version_is_asked_of_the_interpreter(venv, tmp_path):
    assert python_version(sys.executable) == platform.python_version()
    assert python_version(str(venv / "bin" / "python")) == platform.python_version()  # made from this one
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho 9.8.7\n")
    fake.chmod(0o755)
    assert python_version(str(fake)) == "9.8.7"
    assert collect_host(python=str(fake)).python == "9.8.7"
    fake.write_text("#!/bin/sh\nexit 3\n")
    os.utime(fake, ns=(10**9, 10**9))
    assert python_version(str(fake)) is None, "asked again: the file changed"
    assert python_version(str(tmp_path / "gone")) is None
