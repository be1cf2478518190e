"""The worktree pool on a temporary repository with two commits."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from fakebench.fakerepo import git, make_fake_repo

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
