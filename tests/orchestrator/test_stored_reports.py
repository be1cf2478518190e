"""Reports of a stored results root are byte-identical from release to release, for a root of every
results format version.

``tests/data/roots/<version>`` is a results root written by ``shasweep run`` of the fake benches
(``tests/data/roots/write_root.py``): two sweeps of one case (the second with a waiver), one with a
failed run, one lockstep sweep. ``unversioned`` was written before records carried a format version
(version 1), ``v2`` by format version 2 (a foreign bench's rows without variant, algo/task/sim or
columns that do not apply). Every read verb's output of each (report in each format, compare,
history, list, status) is checked in under ``tests/data/roots/<version>-outputs``, rendered by the
code of that time; a change of the read side that changes one byte of them fails here, but for the
last digits of a number printed with all of them (``same_figures``: NumPy's log and exp round the
last bit differently on different CPUs, a ratio's 17th digit with them).
"""

from __future__ import annotations

import re
import shutil
import socket
from collections.abc import Callable
from pathlib import Path

import pytest

from orchestrator.cli.main import main

DATA = Path(__file__).resolve().parents[1] / "data" / "roots"
FULL_PRECISION = re.compile(r"\d+\.\d{12,}")  # a float printed to its last bit (repr's 15-17 digits)
FIGURES = 13  # significant digits kept of such a number: the CPUs' last-bit differences gone
# each checked-in root and its sweeps: the first two of one case, a failed run, a lockstep sweep
ROOTS: dict[str, tuple[str, ...]] = {
    "unversioned": ("fixture-20261206T112704", "fixture-b-20261206T112721", "fixture-fail-20261206T112735",
                    "fixture-lockstep-20261206T112742"),
    "v2": ("fixture-20261206T122716", "fixture-b-20261206T122736", "fixture-fail-20261206T122747",
           "fixture-lockstep-20261206T122759"),
}
CASE = "sac/fake/none"


def commands(sweeps: tuple[str, ...]) -> dict[str, list[str]]:
    """Name of each output -> the command line that prints it (``--results`` added)."""
    return {
        **{f"report-{sweep}": ["report", sweep] for sweep in sweeps},
        **{f"{fmt}-{sweep}": ["report", sweep, "--format", fmt]
           for sweep in sweeps for fmt in ("gh", "junit", "bmf")},
        "compare": ["compare", sweeps[0], sweeps[1]],
        "compare-failed": ["compare", sweeps[1], sweeps[2], "--highlight", "2"],
        "history": ["history", "--case", CASE],
        "history-steps": ["history", "--case", CASE, "--metric", "physics_ms", "--steps", "--side", "new"],
        "history-lockstep": ["history", "--case", "fake", "--last", "1"],
        "list": ["list"],
        "status": ["status", sweeps[2]],
    }


def written(sweeps: tuple[str, ...]) -> tuple[str, ...]:
    """The files ``report`` writes, besides what it prints."""
    return tuple(f"{sweep}.{ext}" for sweep in sweeps for ext in ("md", "csv", "verdicts.json"))


def outputs(root: Path, sweeps: tuple[str, ...], read: Callable[[], tuple[str, str]]) -> dict[str, str]:
    """Every output of the read verbs on ``root`` (the working directory its parent), the root's path
    written as ``<results>``; each command's exit code on its first line. ``read``: what was printed
    since it was last called (stdout, stderr)."""
    found = {}
    for name, argv in commands(sweeps).items():
        code = main([*argv, "--results", str(root)])
        out, err = read()
        found[name] = f"exit {code}\n{out}{err}".replace(str(root), "<results>")
    for name in written(sweeps):
        found[name] = (root / "reports" / name).read_text(encoding="utf-8").replace(str(root), "<results>")
    return found


@pytest.fixture(params=sorted(ROOTS))
def stored_outputs(request, tmp_path, monkeypatch, capsys) -> tuple[str, dict[str, str]]:
    """A checked-in root's name and the outputs of a copy of it (reading may fold its index: never the
    checked-in one)."""
    root = tmp_path / "results"
    shutil.copytree(DATA / request.param, root)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "120")  # the terminal report's width
    monkeypatch.setattr(socket, "gethostname", lambda: "fixture-host")  # JUnit's hostname attribute
    return request.param, outputs(root, ROOTS[request.param], lambda: tuple(capsys.readouterr()))


def same_figures(text: str) -> str:
    """``text`` with every number printed to its last bit rounded to ``FIGURES`` significant digits."""
    return FULL_PRECISION.sub(lambda number: f"{float(number.group()):.{FIGURES}g}", text)


def test_every_read_verb_prints_what_it_printed_when_the_root_was_written(stored_outputs):
    name, found = stored_outputs
    expected_dir = DATA / f"{name}-outputs"
    expected = {path.name: path.read_text(encoding="utf-8") for path in sorted(expected_dir.iterdir())}
    assert sorted(found) == sorted(expected)
    for output, text in found.items():
        assert same_figures(text) == same_figures(expected[output]), \
            f"{output} differs from {expected_dir / output}"


def test_only_the_last_bits_of_a_full_precision_number_are_let_go():
    assert same_figures("ratio 1.626546615471203, n 3") == same_figures("ratio 1.6265466154712032, n 3")
    assert same_figures("1.301066936075639") != same_figures("1.301066936085639"), "the 11th digit counts"
    assert same_figures("0.97 and 1.0425 [1.022, 1.063]") == "0.97 and 1.0425 [1.022, 1.063]"
