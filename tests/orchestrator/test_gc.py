"""``shasweep gc``: bench logs trimmed by age and by size, stale temporary files, ``--dry-run``."""

from __future__ import annotations

import os
import subprocess
import time

from orchestrator.cli.main import main
from orchestrator.contract import host_id


def make_logs(home, sweep: str, run: str, mib: float, age_s: float) -> None:
    run_dir = home / "logs" / sweep / run
    run_dir.mkdir(parents=True)
    (run_dir / "stderr.log").write_bytes(b"x" * int(mib * 2**20))
    when = time.time() - age_s
    for path in (run_dir / "stderr.log", run_dir):
        os.utime(path, (when, when))


def test_gc_trims_logs_by_age_then_size_and_dry_run_removes_nothing(tmp_path, monkeypatch, capsys):
    home = tmp_path / "home"
    monkeypatch.setenv("SHASWEEP_HOME", str(home))
    monkeypatch.chdir(tmp_path)
    make_logs(home, "s1", "ancient", 0.1, age_s=30 * 86400)
    make_logs(home, "s2", "older", 3, age_s=3600)
    make_logs(home, "s2", "newer", 3, age_s=60)
    results = tmp_path / "results" / "runs" / "sweep=s2"
    results.mkdir(parents=True)
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = results / f".r.parquet.{dead.pid}@{host_id()}.tmp"
    stale.write_bytes(b"half")

    argv = ["gc", "--logs-max-mib", "4", "--results", str(tmp_path / "results")]
    assert main([*argv, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "would remove" in out and "ancient" in out and "older" in out and "newer" not in out
    assert str(stale) in out
    assert (home / "logs" / "s1" / "ancient").exists() and stale.exists(), "a dry run removes nothing"

    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "2 run log dir(s) removed" in out and "1 stale temporary file(s) removed" in out
    assert sorted(p.name for p in (home / "logs").glob("*/*")) == ["newer"]
    assert not (home / "logs" / "s1").exists(), "an emptied sweep directory goes too"
    assert not stale.exists()
