"""Reports of a stored results root are byte-identical from release to release.

``tests/data/roots/unversioned`` is a results root written by ``shasweep run`` of the fake benches
before records carried a format version: two sweeps of one case (the second with a waiver), one with
a failed run, one lockstep sweep. Every read verb's output of it (report in each format, compare,
history, list, status) is checked in under ``tests/data/roots/unversioned-outputs``, rendered by the
code of that time; a change of the read side that changes one byte of them fails here.
"""

from __future__ import annotations

import shutil
import socket
from pathlib import Path

import pytest

from orchestrator.cli.main import main

DATA = Path(__file__).resolve().parents[1] / "data" / "roots"
ROOT = DATA / "unversioned"
EXPECTED = DATA / "unversioned-outputs"
SWEEPS = ("fixture-20261206T112704", "fixture-b-20261206T112721", "fixture-fail-20261206T112735",
          "fixture-lockstep-20261206T112742")
CASE = "sac/fake/none"
# name of the output -> the command line that prints it (``--results`` added)
COMMANDS: dict[str, list[str]] = {
    **{f"report-{sweep}": ["report", sweep] for sweep in SWEEPS},
    **{f"{fmt}-{sweep}": ["report", sweep, "--format", fmt]
       for sweep in SWEEPS for fmt in ("gh", "junit", "bmf")},
    "compare": ["compare", SWEEPS[0], SWEEPS[1]],
    "compare-failed": ["compare", SWEEPS[1], SWEEPS[2], "--highlight", "2"],
    "history": ["history", "--case", CASE],
    "history-steps": ["history", "--case", CASE, "--metric", "physics_ms", "--steps", "--side", "new"],
    "history-lockstep": ["history", "--case", "fake", "--last", "1"],
    "list": ["list"],
    "status": ["status", SWEEPS[2]],
}
# the files ``report`` writes, besides what it prints
WRITTEN: tuple[str, ...] = tuple(f"{sweep}.{ext}" for sweep in SWEEPS
                                 for ext in ("md", "csv", "verdicts.json"))


def outputs(root: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, str]:
    """Every output of the read verbs on ``root`` (the working directory its parent), the root's path
    written as ``<results>``; each command's exit code on its first line."""
    found = {}
    for name, argv in COMMANDS.items():
        code = main([*argv, "--results", str(root)])
        out, err = capsys.readouterr()
        found[name] = f"exit {code}\n{out}{err}".replace(str(root), "<results>")
    for name in WRITTEN:
        found[name] = (root / "reports" / name).read_text(encoding="utf-8").replace(str(root), "<results>")
    return found


@pytest.fixture
def stored_outputs(tmp_path, monkeypatch, capsys) -> dict[str, str]:
    """The outputs of a copy of the fixture root (reading may fold its index: never the checked-in one)."""
    root = tmp_path / "results"
    shutil.copytree(ROOT, root)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "120")  # the terminal report's width
    monkeypatch.setattr(socket, "gethostname", lambda: "fixture-host")  # JUnit's hostname attribute
    return outputs(root, capsys)


def test_every_read_verb_prints_what_it_printed_when_the_root_was_written(stored_outputs):
    expected = {path.name: path.read_text(encoding="utf-8") for path in sorted(EXPECTED.iterdir())}
    assert sorted(stored_outputs) == sorted(expected)
    for name, text in stored_outputs.items():
        assert text == expected[name], f"{name} differs from {EXPECTED / name}"
