"""What the fault drills share: sweeps of the fake bench, ``shasweep`` started as a terminal starts it,
the benches it ran, its sweep record, a lab's scheduler and worker as processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "orchestrator"))
from fakebench.fakerepo import COMMAND, FakeRepo  # noqa: E402
from fakebench.terminal import CLIENT  # noqa: E402
from test_entrypoints import Served, serving, shasweep_argv  # noqa: E402

MISBEHAVE = Path(__file__).resolve().parents[1] / "orchestrator" / "fakebench" / "misbehave.py"


def write_sweep(repo: FakeRepo, name: str = "drill", **overrides) -> Path:
    """Two runs (one per commit); ``step_ms`` x 10 steps each."""
    step_ms = overrides.pop("step_ms", 50)
    sweep = {"name": name, "sides": {"old": {"ref": "HEAD~1"}, "new": {"ref": "HEAD"}}, "baseline": "old",
             "cases": ["sac/fake/none"], "known": {"tasks": [], "sims": []},
             "command": [*COMMAND, "--step-ms", str(step_ms)], "repeats": 1, "timeout_s": 120,
             "params": {"num_envs": 8, "warmup": 0, "measure": 10, "threads": 1}, **overrides}
    path = repo.path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(sweep, sort_keys=False))
    return path


def slow_sweep(repo: FakeRepo, tmp_path: Path) -> Path:
    """Two runs of 30 s each while ``tmp_path/slow`` exists (3 s steps), of 50 ms once it is gone."""
    (tmp_path / "slow").touch()
    return write_sweep(repo, step_ms=5, command=[*COMMAND, "--slow-while", str(tmp_path / "slow")])


def client(repo: FakeRepo, argv: list[str], home: Path, out: Path, stdout: int | None = None,
           **env: str) -> subprocess.Popen:
    """``shasweep ARGV`` in its own process group (as a terminal's foreground job), output to ``out``
    (``stdout``: another file descriptor for its standard output, e.g. a pipe)."""
    environ = {**os.environ, "SHASWEEP_HOME": str(home), **env}
    with open(out, "wb") as sink:
        return subprocess.Popen([sys.executable, "-c", CLIENT, *argv], cwd=repo.path,
                                stdout=sink if stdout is None else stdout, stderr=sink, env=environ,
                                start_new_session=True)


def finish(proc: subprocess.Popen, timeout_s: float = 300) -> int:
    """``proc``'s exit code; past ``timeout_s`` its whole process group is killed and the test fails."""
    try:
        return proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        pytest.fail(f"shasweep {proc.args[3:]} did not finish within {timeout_s:g} s")


def bench_pids(home: Path) -> list[int]:
    """PIDs of the benches that wrote a header under ``home``, oldest first."""
    streams = sorted((home / "logs").glob("*/*/stream.jsonl"), key=lambda p: p.stat().st_mtime)
    firsts = [p.read_text().partition("\n")[0] for p in streams]
    return [json.loads(line)["audit"]["pid"] for line in firsts if line]


def record_of(repo: FakeRepo, name: str = "drill") -> dict:
    """The sweep record of the only sweep called ``name`` ({} while it is only reserved)."""
    (path,) = (repo.path / "results" / "sweeps").glob(f"{name}-*.json")
    text = path.read_text()
    return json.loads(text) if text.strip() else {}


@contextmanager
def lab_cluster(tmp_path: Path, home: Path, name: str) -> Iterator[Served]:
    """``shasweep scheduler`` and one ``shasweep worker`` as processes (host lock ``tmp_path/bench.lock``);
    yields the scheduler."""
    with (serving(shasweep_argv("scheduler", "--port", "0", "--dashboard-address", "127.0.0.1:0"),
                  tmp_path / f"{name}-scheduler.log") as scheduler,
          serving(shasweep_argv("worker", scheduler.address), tmp_path / f"{name}-worker.log",
                  env={"SHASWEEP_HOME": str(home), "SHASWEEP_LOCK": str(tmp_path / "bench.lock")})):
        yield scheduler
