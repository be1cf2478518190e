"""Whatever goes wrong, a command prints one line and exits 2 (input) or 3 (run/system), never 1 (a
failed gate) and never a traceback; `plan` writes nothing; the results root is checked."""

from __future__ import annotations

import argparse
import errno
import importlib

import pytest
import yaml
from fakebench.fakerepo import make_fake_repo

from orchestrator.errors import EXIT_INVALID, EXIT_RUN_FAILED

cli_main = importlib.import_module("orchestrator.cli.main")  # the package exports main() under that name


@pytest.mark.parametrize(("raised", "code", "message"), [
    (RuntimeError("something\nnobody expected"), EXIT_RUN_FAILED,
     "unexpected RuntimeError: something nobody expected"),
    (OSError(errno.ENOSPC, "No space left on device"), EXIT_RUN_FAILED, "No space left on device"),
    (RecursionError("maximum recursion depth exceeded"), EXIT_RUN_FAILED, "RecursionError"),
    (KeyboardInterrupt(), EXIT_RUN_FAILED, "interrupted by the user (Ctrl-C)"),
])
def test_every_exception_is_one_line_and_exit_2_or_3(raised, code, message, monkeypatch, capsys):
    def handler(args: argparse.Namespace) -> int:
        raise raised

    gc = cli_main.COMMANDS["gc"]
    monkeypatch.setitem(cli_main.COMMANDS, "gc", cli_main.Command(gc.help, gc.add_arguments, handler))
    assert cli_main.main(["gc"]) == code
    err = capsys.readouterr().err
    assert err == f"shasweep: error: {message}\n" or (message in err and err.count("\n") == 1), err


@pytest.fixture
def repo(tmp_path, monkeypatch):
    monkeypatch.setenv("SHASWEEP_HOME", str(tmp_path / "home"))
    repo = make_fake_repo(tmp_path)
    monkeypatch.chdir(repo.path)
    return repo


def sweep_file(repo, **overrides) -> str:
    sweep = {"name": "x", "sides": {"a": {"ref": "HEAD"}}, "baseline": "a", "cases": ["sac/fake/none"],
             "known": {"tasks": [], "sims": []}, **overrides}
    path = repo.path / "x.yaml"
    path.write_text(yaml.safe_dump(sweep))
    return str(path)


def test_plan_writes_nothing(repo, tmp_path, capsys):
    target = tmp_path / "new" / "results"
    assert cli_main.main(["plan", sweep_file(repo), f"results={target}"]) == 0
    assert not (tmp_path / "new").exists(), "plan created the results root"
    assert not (tmp_path / "home").exists()


@pytest.mark.parametrize(("make", "message"), [
    (lambda root: root.symlink_to(root), "Symlink loop"),
    (lambda root: root.write_text("a file"), "is not a directory"),
])
def test_a_results_root_that_cannot_be_a_directory(repo, tmp_path, capsys, make, message):
    root = tmp_path / "root"
    make(root)
    assert cli_main.main(["plan", sweep_file(repo), f"results={root}"]) == EXIT_INVALID
    err = capsys.readouterr().err
    assert err.startswith("shasweep: error: results: ") and message in err and err.count("\n") == 1, err


@pytest.mark.parametrize("system", ["/etc", "/usr/share/results", "/", "/proc/self", "/var/lib/x"])
def test_a_system_directory_is_never_a_results_root(repo, capsys, system):
    assert cli_main.main(["plan", sweep_file(repo), f"results={system}"]) == EXIT_INVALID
    assert "is the system directory" in capsys.readouterr().err
