"""The worktree pool on a temporary repository with two commits."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fakebench.fakerepo import git, make_fake_repo
from fakebench.waits import is_gone, wait_for

from orchestrator.worker.worktrees import WorktreeError, WorktreePool


@pytest.fixture
def repo(tmp_path):
    return make_fake_repo(tmp_path)


def test_one_checkout_per_sha_reused(tmp_path, repo):
    pool = WorktreePool(tmp_path / "home")
    with pool.checkout(repo.path, repo.shas[0]) as first:
        assert git(first, "rev-parse", "HEAD") == repo.shas[0]
        marker = first / "untracked-marker"
        marker.write_text("x")
    with pool.checkout(repo.path, repo.shas[0]) as again:
        assert again == first and marker.exists(), "a second use must reuse the checkout, not recreate it"
    with pool.checkout(repo.path, repo.shas[1]) as second:
        assert second != first
        assert git(second, "rev-parse", "HEAD") == repo.shas[1]
        assert "WORK_MS = 2.0" in (second / "fake_bench.py").read_text()
    assert "WORK_MS = 4.0" in (first / "fake_bench.py").read_text()
    listed = git(repo.path, "worktree", "list", "--porcelain")
    assert str(first) in listed and str(second) in listed


def test_unknown_sha_is_a_clear_error(tmp_path, repo):
    pool = WorktreePool(tmp_path / "home")
    with pytest.raises(WorktreeError, match="does not exist in repository"):
        with pool.checkout(repo.path, "0" * 40):
            pass


def test_leftover_of_interrupted_checkout_is_replaced(tmp_path, repo):
    pool = WorktreePool(tmp_path / "home")
    with pool.checkout(repo.path, repo.shas[0]) as tree:
        pass
    (tree.parent / f"{repo.shas[0]}.ready").unlink()  # as if creation had died before completing
    (tree / "fake_bench.py").unlink()
    with pool.checkout(repo.path, repo.shas[0]) as tree:
        assert (tree / "fake_bench.py").exists()


def test_prune_removes_unused_and_keeps_busy_and_recent(tmp_path, repo):
    pool = WorktreePool(tmp_path / "home")
    with pool.checkout(repo.path, repo.shas[0]) as old:
        pass
    ready = old.parent / f"{repo.shas[0]}.ready"
    hour_ago = time.time() - 3600
    os.utime(ready, (hour_ago, hour_ago))
    with pool.checkout(repo.path, repo.shas[1]) as busy:
        removed = pool.prune(max_age_s=60)
        assert [p.sha for p in removed] == [repo.shas[0]]
        assert pool.prune(max_age_s=0) == [], "a checkout in use is never pruned"
        assert busy.exists()
    assert not old.exists()
    assert str(old) not in git(repo.path, "worktree", "list", "--porcelain")
    assert [p.sha for p in pool.prune(max_age_s=0)] == [repo.shas[1]]
    assert not Path(busy).exists()
    with pool.checkout(repo.path, repo.shas[0]) as again:  # a pruned SHA is checked out afresh
        assert git(again, "rev-parse", "HEAD") == repo.shas[0]


def test_a_checkout_with_a_modified_tracked_file_is_rebuilt(tmp_path, repo):
    pool = WorktreePool(tmp_path / "home")
    with pool.checkout(repo.path, repo.shas[0]) as tree:
        (tree / "fake_bench.py").write_text("# a bench that edited its own code\n")
    with pool.checkout(repo.path, repo.shas[0]) as tree:
        assert "WORK_MS = 4.0" in (tree / "fake_bench.py").read_text(), "the edit leaked into a later run"
        assert git(tree, "status", "--porcelain", "--untracked-files=no") == ""


def test_a_sweep_checks_a_checkout_once_and_the_next_sweep_again(tmp_path, repo):
    pool = WorktreePool(tmp_path / "home")
    with pool.checkout(repo.path, repo.shas[0], checked_for="sweep-1") as tree:
        (tree / "fake_bench.py").write_text("# edited during sweep-1\n")
    with pool.checkout(repo.path, repo.shas[0], checked_for="sweep-1") as tree:
        assert "edited during sweep-1" in (tree / "fake_bench.py").read_text(), "checked once per sweep"
    with pool.checkout(repo.path, repo.shas[0], checked_for="sweep-2") as tree:
        assert "WORK_MS = 4.0" in (tree / "fake_bench.py").read_text(), "the next sweep checks it again"


def test_another_homes_prune_never_touches_this_homes_worktrees(tmp_path, repo):
    """A container's worktrees live at paths the host cannot see: there they look missing."""
    mine = WorktreePool(tmp_path / "container-home")
    with mine.checkout(repo.path, repo.shas[0]) as tree:
        pass
    hidden = tree.with_name("hidden")
    tree.rename(hidden)  # as seen from the host
    other = WorktreePool(tmp_path / "host-home")
    with other.checkout(repo.path, repo.shas[1]):
        pass
    other.prune(max_age_s=0)
    git(repo.path, "worktree", "prune")  # even a plain prune by hand
    hidden.rename(tree)
    assert str(tree) in git(repo.path, "worktree", "list", "--porcelain")
    with mine.checkout(repo.path, repo.shas[0]) as again:
        assert again == tree and git(again, "rev-parse", "HEAD") == repo.shas[0]


def test_a_stale_locked_registration_is_rebuilt_and_repaired_by_gc(tmp_path, repo):
    pool = WorktreePool(tmp_path / "home")
    with pool.checkout(repo.path, repo.shas[0]) as tree:
        pass
    shutil.rmtree(tree)  # the checkout died with its git: a locked registration of a missing tree
    (tree.parent / f"{repo.shas[0]}.ready").unlink()
    assert "locked" in git(repo.path, "worktree", "list", "--porcelain")
    with pool.checkout(repo.path, repo.shas[0]) as again:  # the next run rebuilds it
        assert git(again, "rev-parse", "HEAD") == repo.shas[0]
    shutil.rmtree(tree)
    pool.prune(max_age_s=10**9)  # gc: keeps recent checkouts, forgets registrations whose tree is gone
    assert str(tree) not in git(repo.path, "worktree", "list", "--porcelain")


HOOK = """#!/bin/sh
# post-checkout: runs inside `git worktree add`; stalls it while the flag file exists
echo $PPID > "{pids}"
while [ -e "{flag}" ]; do sleep 0.1; done
"""
CHECKOUT = """
import sys
from orchestrator.worker.worktrees import WorktreePool
with WorktreePool(__import__("pathlib").Path(sys.argv[1])).checkout(sys.argv[2], sys.argv[3]):
    pass
"""


def test_a_worker_killed_during_worktree_add_takes_its_git_along_and_the_tree_is_rebuilt(tmp_path, repo):
    pids, flag = tmp_path / "git.pid", tmp_path / "stall"
    flag.touch()
    hook = repo.path / ".git" / "hooks" / "post-checkout"
    hook.write_text(HOOK.format(pids=pids, flag=flag))
    hook.chmod(0o755)
    home = tmp_path / "home"
    worker = subprocess.Popen([sys.executable, "-c", CHECKOUT, str(home), str(repo.path), repo.shas[0]])
    git_pid = int(wait_for(lambda: pids.exists() and pids.read_text().strip(), "git worktree add to stall"))
    worker.send_signal(signal.SIGKILL)
    worker.wait()
    assert wait_for(lambda: is_gone(git_pid), "git to die with the worker"), "an orphan git kept checking out"
    flag.unlink()
    with WorktreePool(home).checkout(repo.path, repo.shas[0]) as tree:
        assert git(tree, "rev-parse", "HEAD") == repo.shas[0]
        assert "WORK_MS = 4.0" in (tree / "fake_bench.py").read_text()
