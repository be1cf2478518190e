"""Waiting for the host lock is said and recorded: two ``shasweep run`` processes (each its own
embedded cluster) on one host lock directory; the second waits for the first and says, in one line
under --no-progress, which sweep holds the host, and records how long it waited (``lock_wait_s``)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "orchestrator"))
from fakebench.fakerepo import make_fake_repo  # noqa: E402

from orchestrator.worker.hostinfo import host_id  # noqa: E402
from orchestrator.worker.machine_lock import host_lock_path, read_holder  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
# A bench that holds the host until the test lets it go (a file appears), so the second sweep waits.
HOLDING = "import os, sys, time\nwhile not os.path.exists(sys.argv[1]):\n    time.sleep(0.05)\n"
WAIT_TIMEOUT_S = 240.0


def sweep(name: str, command: list[str]) -> dict:
    return {"name": name, "sides": {"a": {"ref": "HEAD"}}, "baseline": "a", "cases": ["one"], "repeats": 1,
            "protocol": "time", "params": {"warmup": 0, "measure": 1}, "command": command,
            "timeout_s": WAIT_TIMEOUT_S}


def start(sweep_file: Path, cwd: Path, env: dict[str, str], log: Path) -> subprocess.Popen:
    with open(log, "wb") as out:
        return subprocess.Popen([sys.executable, "-m", "orchestrator.cli", "run", str(sweep_file),
                                 "--no-progress"], cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)


def wait_for(condition, what: str) -> None:
    deadline = time.monotonic() + WAIT_TIMEOUT_S
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def test_the_second_sweep_says_whom_it_waits_for_and_records_the_wait(tmp_path, monkeypatch):
    repo = make_fake_repo(tmp_path)
    release = tmp_path / "release"
    env = {**os.environ, "SHASWEEP_HOME": str(tmp_path / "home"),
           "SHASWEEP_LOCK_DIR": str(tmp_path / "locks"),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    env.pop("SHASWEEP_LOCK", None)
    first_file, second_file = tmp_path / "first.yaml", tmp_path / "second.yaml"
    first_file.write_text(yaml.safe_dump(sweep("first", ["{python}", "-c", HOLDING, str(release)])))
    second_file.write_text(yaml.safe_dump(sweep("second", ["{python}", "-c", "pass"])))
    first_log, second_log = tmp_path / "first.log", tmp_path / "second.log"
    first = start(first_file, repo.path, env, first_log)
    second = None
    try:
        monkeypatch.setenv("SHASWEEP_LOCK_DIR", str(tmp_path / "locks"))
        lock = host_lock_path(host_id())
        wait_for(lambda: read_holder(lock) is not None, "the first sweep to hold the host lock")
        holder = read_holder(lock)
        second = start(second_file, repo.path, env, second_log)
        wait_for(lambda: "waiting for host" in second_log.read_text(), "the second sweep to say it waits")
        time.sleep(1.0)  # a wait long enough to tell from no wait at all
        release.touch()
        assert first.wait(timeout=WAIT_TIMEOUT_S) == 0, first_log.read_text()
        assert second.wait(timeout=WAIT_TIMEOUT_S) == 0, second_log.read_text()
    finally:
        release.touch()
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                proc.kill()
    output = second_log.read_text()
    line = next(line for line in output.splitlines() if "waiting for host" in line)
    held_by = rf"held by sweep {re.escape(holder.sweep_id)} \(pid {holder.pid}\) for \d+ s"
    assert re.search(rf"waiting for host \S+: {held_by}", line), line
    assert holder.sweep_id.startswith("first-")
    assert len([line for line in output.splitlines() if "waiting for host" in line]) == 1, "one line, once"
    runs = pd.read_parquet(repo.path / "results" / "runs")
    waits = runs.set_index(runs["sweep_id"].str.split("-").str[0])["lock_wait_s"]
    assert waits["second"] >= 1.0, "the wait is recorded"
    assert waits["first"] < waits["second"]
    assert re.search(r"waited \d+ s for the host lock", output), "the finished run's line says it waited"

