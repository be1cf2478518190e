"""Write a checked-in results root with today's shasweep, and the outputs of every read verb of it.

    python3 tests/data/roots/write_root.py v2             # a new root and its outputs
    python3 tests/data/roots/write_root.py v2 --outputs   # its outputs again, as the read side now prints

runs the fake benches (``tests/orchestrator/fakebench``) in four sweeps: ``fixture`` and
``fixture-b`` (old: HEAD~1 against new: HEAD, one case, 3 rounds; a waiver of the second's gate 1),
``fixture-fail`` (a third side whose bench fails) and ``fixture-lockstep``, into
``tests/data/roots/<name>/`` (runs, steps, sweeps, index), then writes what
``test_stored_reports.py`` compares to ``tests/data/roots/<name>-outputs/``; put the sweep ids it
prints into ``test_stored_reports.ROOTS``. A root once checked in is never written again: it is the
format of its time, which every later shasweep must read. Its outputs are written again
(``--outputs``) only where a change of the read side is meant to change what it prints, in the
commit that changes it.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import socket
import sys
import tempfile
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parents[1] / "orchestrator"), str(HERE.parents[2])]  # tests/orchestrator, the repo

from fakebench.fakerepo import COMMAND, make_fake_repo, make_lockstep_repo  # noqa: E402
from test_stored_reports import ROOTS, outputs  # noqa: E402

from orchestrator.cli.main import main  # noqa: E402

PARAMS = {"warmup": 1, "measure": 5, "num_envs": 8, "threads": 1}
GATES = [{"metric": "throughput", "min_ratio": 1.2}, {"metric": "physics_ms", "max_ratio": 0.5}]
SIDES = {"old": {"ref": "HEAD~1"}, "new": {"ref": "HEAD"}}


def sweeps(results: Path) -> list[tuple[str, dict]]:
    """(repository, spec) of each sweep, in the order they run."""
    fake = {"sides": SIDES, "baseline": "old", "cases": ["sac/fake/none"], "params": PARAMS, "repeats": 3,
            "gates": GATES, "command": list(COMMAND), "results": str(results)}
    failing = {**fake, "name": "fixture-fail", "repeats": 1, "continue_on_error": True,
               "sides": {**SIDES, "bad": {"ref": "HEAD", "overrides": ["params.mode=fail"]}},
               "params": {**PARAMS, "mode": "ok"}, "command": [*COMMAND, "--mode", "{mode}"]}
    lockstep = {"name": "fixture-lockstep", "sides": SIDES, "baseline": "old", "cases": ["fake"],
                "params": {"warmup": 1, "measure": 4, "threads": 1}, "repeats": 2, "order": "lockstep",
                "lockstep": {"blocks": 3, "block_steps": 2},
                "gates": [{"metric": "throughput", "min_ratio": 0.5}], "results": str(results),
                "command": ["{python}", "lockstep_bench.py", "--stream", "{stream}", "--control", "{control}",
                            "--warmup", "{warmup}", "--measure", "{measure}"]}
    return [("fake", {**fake, "name": "fixture"}), ("fake", {**fake, "name": "fixture-b"}),
            ("fake", failing), ("lockstep", lockstep)]


def run_sweeps(work: Path, results: Path) -> list[str]:
    """Run every sweep (and waive the second's gate 1); their ids."""
    repos = {"fake": make_fake_repo(work).path, "lockstep": make_lockstep_repo(work).path}
    ids = []
    for repo, spec in sweeps(results):
        path = repos[repo] / f"{spec['name']}.yaml"
        path.write_text(yaml.safe_dump(spec, sort_keys=False))
        os.chdir(repos[repo])
        main(["run", str(path), "--no-progress"])
        ids.append(max((p.stem for p in (results / "sweeps").glob(f"{spec['name']}-2*.json")),
                       key=lambda stem: stem))
    main(["waive", ids[1], "--case", "sac/fake/none", "--gate", "1", "--reason",
          "known: physics bound too tight", "--by", "fixture", "--results", str(results)])
    return ids


def write(name: str) -> None:
    """A new root ``name`` and its outputs."""
    target, expected = HERE / name, HERE / f"{name}-outputs"
    if target.exists() or expected.exists():
        raise SystemExit(f"{target} exists: a checked-in root is never written again")
    with tempfile.TemporaryDirectory(prefix="shasweep-fixture-") as work:
        results = Path(work) / "results"
        ids = run_sweeps(Path(work), results)
        target.mkdir()
        for part in ("runs", "steps", "sweeps", "index"):
            shutil.copytree(results / part, target / part, ignore=shutil.ignore_patterns(".*"))
        os.chdir(HERE)
    write_outputs(target, tuple(ids))
    print("sweeps:", ", ".join(ids))


def write_outputs(root: Path, ids: tuple[str, ...]) -> None:
    """Every read verb's output of a copy of ``root`` (reading may fold its index), as the test reads
    it, into ``<root>-outputs``."""
    with tempfile.TemporaryDirectory(prefix="shasweep-read-") as work:
        copy = Path(work) / "results"
        shutil.copytree(root, copy)
        os.chdir(work)
        found = _read_verbs(copy, ids)
        os.chdir(HERE)
    expected = root.parent / f"{root.name}-outputs"
    shutil.rmtree(expected, ignore_errors=True)
    expected.mkdir()
    for output, text in found.items():
        (expected / output).write_text(text, encoding="utf-8")


def _read_verbs(copy: Path, ids: tuple[str, ...]) -> dict[str, str]:
    """``test_stored_reports.outputs`` of ``copy`` as the test sees them (its terminal width and host
    name), printed output captured."""
    os.environ["COLUMNS"] = "120"
    socket.gethostname = lambda: "fixture-host"
    out, err = io.StringIO(), io.StringIO()

    def read() -> tuple[str, str]:
        texts = out.getvalue(), err.getvalue()
        for buffer in (out, err):
            buffer.seek(0)
            buffer.truncate()
        return texts

    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        return outputs(copy, ids, read)


if __name__ == "__main__":
    name = sys.argv[1] if len(sys.argv) > 1 else "v2"
    if "--outputs" in sys.argv[2:]:
        write_outputs(HERE / name, ROOTS[name])
    else:
        write(name)
