"""Drills on a results root from outside: a FIFO planted in the index (a cache: skipped, named, and
removed by a rebuild; ``report`` and ``plan`` once stopped at it with exit 3), and two compactions of
one sweep at once (the loser is told a compaction holds it, by which process). Real ``shasweep``
processes and signals."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
from drill_helpers import client, finish, write_sweep
from fakebench.fakerepo import FakeRepo, make_fake_repo
from fakebench.waits import wait_for
from store_roots import write_sweep as write_stored_sweep

from orchestrator.errors import EXIT_INVALID, EXIT_OK, EXIT_RUN_FAILED

STORED = "stored-20260101T000000"


def shasweep(repo: FakeRepo, argv: list[str], home: Path, out: Path, codes: set[int]) -> str:
    """``shasweep ARGV``'s output; it must end with one of ``codes`` and no traceback (``report`` of
    the stored sweep exits 3: its runs fail the audit; ``plan`` 0)."""
    code = finish(client(repo, argv, home, out, SHASWEEP_LOCK=str(out.with_suffix(".lock"))), timeout_s=120)
    said = out.read_text()
    assert code in codes and "Traceback" not in said and "FileNotFoundError" not in said, (code, said)
    if argv[0] == "report":
        assert "PASS 0 / FAIL 0 / INCONCLUSIVE 0" in said, said
    return said


def test_a_fifo_in_the_index_is_skipped_by_report_and_plan_and_removed_by_a_rebuild(tmp_path):
    repo = make_fake_repo(tmp_path)
    home = tmp_path / "home"
    write_stored_sweep(repo.path, STORED)  # the real writer's files (runs that fail the audit), indexed
    sweep = write_sweep(repo, gates=[{"metric": "throughput", "min_ratio": 0.5}])  # plan reads its history
    assert finish(client(repo, ["index", "--rebuild"], home, tmp_path / "first.out")) == EXIT_OK
    index = repo.path / "results" / "index"
    fifo = index / "delta" / f"{0:020d}-1-fifo.parquet"
    fifo.parent.mkdir(exist_ok=True)
    os.mkfifo(fifo)
    for argv in (["report", STORED], ["plan", str(sweep)]):
        said = shasweep(repo, argv, home, tmp_path / f"{argv[0]}.out", {EXIT_OK, EXIT_RUN_FAILED})
        assert f"skipping {fifo} of the results index: not a regular file" in said, said
    (index / "runs.parquet").unlink()
    os.mkfifo(index / "runs.parquet")  # the base too
    shasweep(repo, ["report", STORED], home, tmp_path / "again.out", {EXIT_RUN_FAILED})
    assert finish(client(repo, ["index", "--rebuild"], home, tmp_path / "index.out")) == EXIT_OK
    assert not fifo.exists() and (index / "runs.parquet").is_file(), (tmp_path / "index.out").read_text()


def test_the_loser_of_two_compactions_at_once_is_told_which_process_compacts_the_sweep(tmp_path):
    sweeps = [f"c-202601{day:02d}T000000" for day in range(1, 9)]
    for day, sweep in enumerate(sweeps):
        write_stored_sweep(tmp_path, sweep, day)
    root = tmp_path / "results"
    first = subprocess.Popen([sys.executable, "-m", "orchestrator.cli", "compact", "--all", "--results",
                              str(root)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    held = None
    try:
        deadline = time.monotonic() + 120
        while held is None and first.poll() is None and time.monotonic() < deadline:
            notes = list((root / "sweeps").glob(".*.lock.holder"))  # a compaction holds that sweep's lock
            if not notes:
                continue
            first.send_signal(signal.SIGSTOP)
            wait_for(lambda: psutil.Process(first.pid).status() == psutil.STATUS_STOPPED, "the stop")
            if notes[0].exists():  # still held now that it is stopped: caught in the act
                held = notes[0]
            else:  # it let go between the look and the stop: its next sweep
                first.send_signal(signal.SIGCONT)
        assert held is not None, "shasweep compact --all never held a sweep's lock where it could be seen"
        sweep = held.name.removeprefix(".").removesuffix(".lock.holder")
        assert json.loads(held.read_text()) == {"doing": "compact", "pid": first.pid}
        loser = subprocess.run([sys.executable, "-m", "orchestrator.cli", "compact", sweep, "--results",
                                str(root)], capture_output=True, text=True, timeout=120)
        assert loser.returncode == EXIT_INVALID, loser
        said = loser.stdout + loser.stderr
        assert f"sweep {sweep!r} is being compacted by another shasweep process (pid {first.pid}, " in said
        assert "being run" not in said and "Traceback" not in said, said
    finally:
        first.send_signal(signal.SIGCONT)
    assert first.wait(timeout=120) == EXIT_OK, first.stderr.read()
    assert not list((root / "sweeps").glob(".*.lock.holder")), "every note goes with its lock"
