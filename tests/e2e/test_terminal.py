"""What a terminal shows: `shasweep run` and `report` under a real pty of a given width end with the
verdict line, and no line is wider than the terminal."""

from __future__ import annotations

import fcntl
import os
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "orchestrator"))
from fakebench.fakerepo import COMMAND, make_fake_repo  # noqa: E402
from test_report import G1, GO2, write_go2_runs, write_run, write_sweep  # noqa: E402

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


def run_in_pty(argv: list[str], columns: int, cwd: Path, timeout_s: float = 300) -> tuple[int, list[str]]:
    """Run ``python -m orchestrator.cli ARGV`` with its stdout on a pty ``columns`` wide; (rc, lines)."""
    leader, follower = os.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")} | {"TERM": "xterm-256color"}
    proc = subprocess.Popen([sys.executable, "-m", "orchestrator.cli", *argv], cwd=cwd, env=env,
                            stdin=subprocess.DEVNULL, stdout=follower, stderr=subprocess.DEVNULL)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the child closed the pty
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    rc = proc.wait(timeout=timeout_s)
    text = ANSI.sub("", b"".join(chunks).decode("utf-8", errors="replace")).replace("\r\n", "\n")
    return rc, [line.rstrip() for line in text.split("\n")]


def assert_fits(lines: list[str], columns: int) -> None:
    wide = [line for line in lines if len(line) > columns]
    assert not wide, f"lines wider than {columns}: {wide}"


@pytest.mark.parametrize("columns", [72, 120])
def test_report_fits_the_terminal_and_ends_with_the_verdict(tmp_path, columns):
    sweep = "ab-20260101T000000"
    write_sweep(tmp_path, sweep, [{"metric": "throughput", "min_ratio": 1.5},
                                  {"metric": "throughput", "min_ratio": 2.5},
                                  {"metric": "physics_ms", "max_ratio": 0.55}], [GO2, G1])
    write_go2_runs(tmp_path, sweep)
    write_run(tmp_path, sweep, "g1-failed-run-with-a-long-key", "cand", G1, status="failed")
    rc, lines = run_in_pty(["report", sweep, "--results", str(tmp_path)], columns, tmp_path)
    assert rc == 3
    text = [line for line in lines if line]
    # go2: 2.0x passes >= 1.5x and 0.5x <= 0.55x, fails >= 2.5x; g1 has no ok candidate run: 3 NO DATA.
    # The verdict line is the last; wider than 72 columns, it folds between words.
    verdict = " ".join(text[max(i for i, line in enumerate(text) if line.startswith("PASS ")):])
    assert verdict == "PASS 2 / FAIL 0 / INCONCLUSIVE 1 / NO DATA 3 — exit 3 (1 run(s) not ok, 5 not run)"
    assert_fits(lines, columns)
    assert "a" * 10 in "\n".join(lines) and "a" * 11 not in "\n".join(lines), "short SHAs"
    (failed,) = [line for line in lines if line.startswith("g1-failed-")]
    assert failed.split()[1:4] == ["cand", "failed", "ValueError:"], "run, side, status, then the error"


@pytest.mark.slow
def test_run_ends_with_the_verdict_line_within_the_width(tmp_path):
    repo = make_fake_repo(tmp_path)
    sweep = {
        "name": "pty", "sides": {"old": {"ref": "HEAD~1"}, "new": {"ref": "HEAD"}}, "baseline": "old",
        "cases": ["sac/fake/none"], "known": {"tasks": [], "sims": []}, "command": list(COMMAND),
        "params": {"num_envs": 8, "warmup": 1, "measure": 4, "threads": 1}, "repeats": 2, "timeout_s": 60,
        "gates": [{"metric": "physics_ms", "max_ratio": 0.6}],
    }
    (tmp_path / "sweep.yaml").write_text(yaml.safe_dump(sweep))
    os.environ.setdefault("SHASWEEP_HOME", str(tmp_path / "home"))
    rc, lines = run_in_pty(["run", str(tmp_path / "sweep.yaml")], 64, repo.path)
    text = [line for line in lines if line]
    assert rc == 0, text
    assert text[-1] == "PASS 1 / FAIL 0 / INCONCLUSIVE 0 — exit 0"
    assert_fits(lines, 64)
