"""What a terminal shows: `shasweep run` and `report` under a real pty of a given width end with the
verdict line, no line is wider than the terminal, and no word is split across lines: a narrow
terminal leaves columns out or abbreviates them instead."""

from __future__ import annotations

import fcntl
import os
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "orchestrator"))
from fakebench.fakerepo import COMMAND, make_fake_repo  # noqa: E402
from test_report import G1, GO2, write_go2_runs, write_run, write_sweep  # noqa: E402

from orchestrator.spec.record import SweepRecord  # noqa: E402
from orchestrator.store.records import write_record  # noqa: E402

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


def assert_no_split_words(lines: list[str], wide: list[str]) -> None:
    """Every word of ``lines`` is a word of the same report rendered ``wide`` (nothing wrapped), or
    one abbreviated with an ellipsis at its end or in its middle (a case name keeps its end); a word
    split across two lines leaves fragments that are neither. The note naming left-out columns is the
    narrow rendering's own."""
    known = {word for line in wide for word in line.split()}
    in_note = False
    for line in lines:
        in_note = in_note or line.startswith("(left out at")
        if in_note:
            in_note = not line.endswith(")")
            continue
        for word in line.split():
            head, cut, tail = word.partition("…")
            abbreviated = cut and any(k.startswith(head) and k.endswith(tail) and len(k) >= len(head + tail)
                                      for k in known)
            assert word in known or abbreviated, f"{word!r} in {line!r} is a fragment of a word"


REFERENCE_COLUMNS = 400  # wide enough that nothing wraps: the words a narrower rendering may show


@pytest.fixture(scope="module")
def gated_sweep(tmp_path_factory) -> tuple[Path, str, list[str]]:
    """A two-case sweep with three gates and a failed run: (results root, sweep id, its report at
    ``REFERENCE_COLUMNS``), written and rendered once for every width."""
    root, sweep = tmp_path_factory.mktemp("gated"), "ab-20260101T000000"
    write_sweep(root, sweep, [{"metric": "throughput", "min_ratio": 1.5},
                              {"metric": "throughput", "min_ratio": 2.5},
                              {"metric": "physics_ms", "max_ratio": 0.55}], [GO2, G1])
    write_go2_runs(root, sweep)
    write_run(root, sweep, "g1-failed-run-with-a-long-key", "cand", G1, status="failed")
    return root, sweep, run_in_pty(["report", sweep, "--results", str(root)], REFERENCE_COLUMNS, root)[1]


@pytest.mark.parametrize("columns", [72, 80, 120, 200])
def test_report_fits_the_terminal_and_ends_with_the_verdict(gated_sweep, columns):
    root, sweep, wide = gated_sweep
    rc, lines = run_in_pty(["report", sweep, "--results", str(root)], columns, root)
    assert rc == 3
    text = [line for line in lines if line]
    # go2: 2.0x passes >= 1.5x and 0.5x <= 0.55x, fails >= 2.5x; g1 has no ok candidate run: 3 NO DATA.
    # The verdict line is the last; wider than the terminal, it breaks between phrases.
    last = text[max(i for i, line in enumerate(text) if line.startswith("PASS ")):]
    verdict = " ".join(" ".join(last).split())
    assert verdict == "PASS 2 / FAIL 0 / INCONCLUSIVE 1 / NO DATA 3 — exit 3 (1 run(s) not ok, 5 not run)"
    assert_fits(lines, columns)
    assert_no_split_words(lines, wide)
    assert "a" * 10 in "\n".join(lines) and "a" * 11 not in "\n".join(lines), "short SHAs"
    (failed,) = [line for line in lines if line.startswith("g1-failed-")]
    assert failed.split()[1:4] == ["cand", "failed", "ValueError:"], "run, side, status, then the error"


LONG_CASES = ("perf/old/tokenize_a_long_sql_statement_with_comments", "perf/new/format_nested_subqueries",
              "suite/regression/parse_every_statement_of_a_large_dump_file")
SIDES = {"main": "c" * 40, "feature-with-a-long-name": "d" * 40, "experiment": "e" * 40}


def write_wide_sweep(root: Path, sweep_id: str) -> None:
    """Three sides, long case names, four metrics (one a long phase name), gates and a failed run: a
    report wider than 80 columns."""
    spec = {"name": "wide", "baseline": "main", "cases": list(LONG_CASES), "repeats": 3,
            "sides": {s: {"ref": s} for s in SIDES}, "order": "interleaved", "order_seed": 0,
            "metrics": ["throughput", "wall_ms", "update_state.observation.compute_ms", "max_rss_mib"],
            "gates": [{"metric": "throughput", "min_ratio": 0.97}, {"metric": "wall_ms", "max_ratio": 1.05}]}
    write_record(root, SweepRecord.from_json({
        "sweep_id": sweep_id, "created": "2026-01-01T00:00:00+00:00", "status": "finished", "repo": "/repo",
        "planned_runs": len(LONG_CASES) * len(SIDES) * 3, "spec": spec,
        "sides": {s: {"ref": s, "sha": sha} for s, sha in SIDES.items()}}))
    rng = np.random.default_rng(5)
    for c, case in enumerate(LONG_CASES):
        for s, (side, sha) in enumerate(SIDES.items()):
            for repeat in range(3):
                failed = (c, s, repeat) == (2, 2, 1)
                row = {"sweep_id": sweep_id, "run_key": f"k{c}{s}{repeat}", "side": side, "ref": side,
                       "sha": sha, "case": case, "repeat": repeat, "order": 9 * c + 3 * repeat + s,
                       "status": "failed" if failed else "ok", "audited": True,
                       "error": "bench exited with code 1: RuntimeError: the statement parser ran out of "
                                "memory while reading the dump (logs: /tmp/x/stderr.log)" if failed else None,
                       "throughput": 1000 * (1 + 0.1 * s) * float(np.exp(rng.normal(0, 0.01))),
                       "wall_ms": 12.5 / (1 + 0.1 * s), "update_state.observation.compute_ms": 0.25 + s,
                       "max_rss_mib": 250.0 + s, "params": "{}", "env": "{}"}
                path = root / "runs" / f"sweep={sweep_id}" / f"k{c}{s}{repeat}.parquet"
                path.parent.mkdir(parents=True, exist_ok=True)
                pq.write_table(pa.Table.from_pylist([row]), path)


@pytest.fixture(scope="module")
def wide_sweep(tmp_path_factory) -> tuple[Path, str, list[str]]:
    """``write_wide_sweep``'s sweep: (results root, sweep id, its report at ``REFERENCE_COLUMNS``)."""
    root, sweep = tmp_path_factory.mktemp("wide"), "wide-20260101T000000"
    write_wide_sweep(root, sweep)
    return root, sweep, run_in_pty(["report", sweep, "--results", str(root)], REFERENCE_COLUMNS, root)[1]


@pytest.mark.parametrize("columns", [80, 120, 200])
def test_a_wide_report_never_splits_a_word(wide_sweep, columns):
    root, sweep, wide = wide_sweep
    rc, lines = run_in_pty(["report", sweep, "--results", str(root)], columns, root)
    assert rc == 3, lines
    assert_fits(lines, columns)
    assert_no_split_words(lines, wide)
    text = "\n".join(lines)
    assert [line for line in lines if line][-1].startswith("PASS ")
    assert ("(left out at 80 columns: " in text) == (columns == 80), "only narrow terminals leave columns out"
    for case in LONG_CASES[:2]:
        assert case in text or columns == 80, "wide enough: case names in full"
    assert "RuntimeError:" in text, "the failed run's error, abbreviated to the width left"


@pytest.mark.slow
def test_run_ends_with_the_verdict_line_within_the_width(tmp_path, monkeypatch):
    repo = make_fake_repo(tmp_path)
    sweep = {
        "name": "pty", "sides": {"old": {"ref": "HEAD~1"}, "new": {"ref": "HEAD"}}, "baseline": "old",
        "cases": ["sac/fake/none"], "known": {"tasks": [], "sims": []}, "command": list(COMMAND),
        "params": {"num_envs": 8, "warmup": 1, "measure": 4, "threads": 1}, "repeats": 2, "timeout_s": 60,
        "gates": [{"metric": "physics_ms", "max_ratio": 0.6}],
    }
    (tmp_path / "sweep.yaml").write_text(yaml.safe_dump(sweep))
    monkeypatch.setenv("SHASWEEP_HOME", str(tmp_path / "home"))
    rc, lines = run_in_pty(["run", str(tmp_path / "sweep.yaml")], 64, repo.path)
    text = [line for line in lines if line]
    assert rc == 0, text
    assert text[-1] == "PASS 1 / FAIL 0 / INCONCLUSIVE 0 — exit 0"
    assert_fits(lines, 64)
