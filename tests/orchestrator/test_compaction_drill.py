"""Compaction killed by SIGKILL: at every step it takes that changes the file system (a process per
kill point), and at random moments of a real ``shasweep compact --all``. Whatever the moment, the
root stays readable with every run exactly once, by shasweep and by pandas and duckdb, and the next
compaction finishes the job."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest
from store_roots import plain_runs, plain_steps, runs_seen, steps_seen, write_sweep

from orchestrator.store import compact
from orchestrator.store.partitions import sweep_partitions

SWEEP = "k-20260101T000000"

# Runs in a process of its own: for each kill point k, a forked child compacts a fresh copy of the
# root and SIGKILLs itself at its k-th call of any function below (before making the call), until a
# child gets through. ``fallback``: as on a file system that cannot exchange directories; ``split``
# (a directory on another file system, or ""): each copy's two tables are moved there and linked.
FORK_SERVER = textwrap.dedent("""
    import os, shutil, signal, sys
    from orchestrator.store import compact, swap

    template, out, sweep, fallback, split = sys.argv[1:4] + [sys.argv[4] == "1", sys.argv[5]]
    MUTATIONS = [(os, "replace"), (os, "rename"), (os, "unlink"), (os, "mkdir"), (os, "rmdir"),
                 (os, "link"), (os, "fsync"), (swap, "exchange")]

    def bomb(kill_at):
        calls = [0]
        for module, name in MUTATIONS:
            real = getattr(module, name)
            def counted(*args, _real=real, **kwargs):
                calls[0] += 1
                if calls[0] == kill_at:
                    os.kill(os.getpid(), signal.SIGKILL)
                return _real(*args, **kwargs)
            setattr(module, name, counted)

    for k in range(1, 2000):
        root = os.path.join(out, f"k{k:04d}")
        shutil.copytree(template, root)
        for kind in ("runs", "steps") if split else ():
            table, elsewhere = os.path.join(root, "results", kind), os.path.join(split, f"k{k:04d}", kind)
            shutil.move(table, elsewhere)
            os.symlink(elsewhere, table)
        pid = os.fork()
        if pid == 0:
            if fallback:
                swap._EXCHANGE = None
            bomb(k)
            compact.compact_sweep(os.path.join(root, "results"), sweep)
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        if not (os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL):
            assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
            print(k, flush=True)  # the number of kill points + 1
            break
""")


@pytest.fixture
def template(tmp_path):
    """An uncompacted sweep (and another one beside it), and what every reader must see in it."""
    base = tmp_path / "template"
    write_sweep(base, SWEEP, 0)
    write_sweep(base, "other-20260102T000000", 1, repeats=1)
    root = base / "results"
    return base, (runs_seen(root), steps_seen(root))


def kill_at_every_step(template: Path, out: Path, fallback: bool, split: Path | None = None) -> list[Path]:
    out.mkdir()
    proc = subprocess.run([sys.executable, "-c", FORK_SERVER, str(template), str(out), SWEEP,
                           "1" if fallback else "0", str(split or "")], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr
    points = int(proc.stdout.split()[-1]) - 1
    assert points > 20, "every write, rename, fsync, exchange and removal is a kill point"
    return sorted(out.iterdir())[:points]


def assert_whole(root: Path, expected: tuple[list, list], plain: bool = True) -> None:
    assert (runs_seen(root), steps_seen(root)) == expected, "shasweep reads every run exactly once"
    if plain:
        assert plain_runs(root) == expected[0] and plain_steps(root) == expected[1], "so do pandas and duckdb"


@pytest.mark.slow
def test_killed_at_any_step_the_root_stays_whole_and_the_next_compaction_finishes(template, tmp_path):
    base, expected = template
    for copy in kill_at_every_step(base, tmp_path / "kills", fallback=False):
        root = copy / "results"
        assert_whole(root, expected)
        outcome = compact.compact_sweep(root, SWEEP)
        assert outcome.blocked is None
        assert_whole(root, expected)
        assert not compact.staging_dir(root, SWEEP).exists()
        assert [len(list((root / kind / f"sweep={SWEEP}").iterdir())) for kind in ("runs", "steps")] == [1, 1]


@pytest.mark.slow
def test_killed_at_any_step_with_its_tables_on_another_file_system(template, tmp_path):
    other = Path("/dev/shm")
    if not other.is_dir() or os.stat(other).st_dev == os.stat(tmp_path).st_dev:
        pytest.skip(f"{other} is not a file system apart from {tmp_path}")
    base, expected = template
    split = Path(tempfile.mkdtemp(dir=other, prefix="shasweep-kills-"))
    try:
        for copy in kill_at_every_step(base, tmp_path / "kills", fallback=False, split=split):
            root = copy / "results"
            assert_whole(root, expected)
            assert compact.compact_sweep(root, SWEEP).blocked is None
            assert_whole(root, expected)
            assert not compact.staging_dir(root, SWEEP).exists()
            assert not (split / copy.name / compact.STAGING / SWEEP).exists(), "nothing staged is left"
            assert (root / "runs").is_symlink()
            assert [len(list((root / kind / f"sweep={SWEEP}").iterdir())) for kind in ("runs", "steps")] \
                == [1, 1]
    finally:
        shutil.rmtree(split)


@pytest.mark.slow
def test_without_directory_exchange_a_crash_hides_a_sweep_until_the_next_compaction(template, tmp_path):
    base, expected = template
    for copy in kill_at_every_step(base, tmp_path / "kills", fallback=True):
        root = copy / "results"
        runs, steps = runs_seen(root), steps_seen(root)
        for seen, whole in ((runs, expected[0]), (steps, expected[1])):
            mine = [row for row in whole if SWEEP in str(row[0]) or SWEEP in str(row[1])]
            found = [row for row in seen if row in mine]
            assert found in (mine, []), "the sweep is whole or (between two renames) absent, never half"
            assert [row for row in seen if row not in mine] == [r for r in whole if r not in mine]
        compact.compact_sweep(root, SWEEP)
        assert_whole(root, expected)


@pytest.mark.slow
def test_shasweep_compact_killed_at_random_moments(tmp_path):
    base = tmp_path / "template"
    sweeps = [f"r-202601{day:02d}T000000" for day in range(1, 9)]
    for day, sweep in enumerate(sweeps):
        write_sweep(base, sweep, day)
    expected = (runs_seen(base / "results"), steps_seen(base / "results"))
    rng = random.Random(20260101)

    def compact_all(copy: Path) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-m", "orchestrator.cli", "compact", "--all", "--results",
                                 str(copy / "results")], stdout=subprocess.PIPE, text=True)

    full = tmp_path / "full"
    shutil.copytree(base, full)
    proc = compact_all(full)
    proc.stdout.readline()  # the first sweep is done: the rest is what a kill can land in
    started = time.monotonic()
    assert proc.wait(timeout=600) == 0
    rest = time.monotonic() - started
    for attempt in range(8):
        copy = tmp_path / f"kill{attempt}"
        shutil.copytree(base, copy)
        proc = compact_all(copy)
        proc.stdout.readline()
        time.sleep(rng.uniform(0, rest))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        proc.stdout.close()
        root = copy / "results"
        assert_whole(root, expected)
        for sweep in sweep_partitions(root):
            compact.compact_sweep(root, sweep)
        assert_whole(root, expected)
        assert not (root / compact.STAGING).exists() or not any((root / compact.STAGING).iterdir())
