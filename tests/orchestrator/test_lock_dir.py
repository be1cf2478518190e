"""The host lock directory is shared with other users, so nothing in it is trusted: a link, FIFO or
hard link planted under a lock file's name is refused, never followed, truncated or made shared."""

from __future__ import annotations

import fcntl
import os
import stat
from pathlib import Path

import pytest

from orchestrator.errors import EXIT_INVALID
from orchestrator.worker.host_claim import HostClaim
from orchestrator.worker.machine_lock import (
    LockDirError,
    holder_path,
    host_lock_path,
    machine_lock,
    marker_path,
    prepare_lock_dir,
)


@pytest.fixture
def lock(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("SHASWEEP_LOCK_DIR", str(tmp_path / "locks"))
    monkeypatch.delenv("SHASWEEP_LOCK", raising=False)
    (tmp_path / "locks").mkdir()
    return host_lock_path("h")


@pytest.fixture
def victim(tmp_path) -> Path:
    """A file of this user's that a planted name points at (its bytes and mode must not change)."""
    path = tmp_path / "bashrc"
    path.write_text("export PATH=/usr/bin\n")
    path.chmod(0o644)
    return path


def untouched(victim: Path) -> bool:
    return victim.read_text() == "export PATH=/usr/bin\n" and stat.S_IMODE(victim.stat().st_mode) == 0o644


@pytest.mark.parametrize("planted", [lambda lock: lock, holder_path, marker_path],
                         ids=["lock", "holder", "run marker"])
def test_a_symbolic_link_under_a_lock_files_name_is_refused_and_its_target_left_alone(lock, victim, planted):
    planted(lock).symlink_to(victim)
    with pytest.raises(LockDirError, match="symbolic link") as refused:
        with machine_lock(lock, "s-20260101T000000", "k"):
            pass
    assert refused.value.exit_code == EXIT_INVALID
    assert str(planted(lock)) in str(refused.value)
    assert untouched(victim)


def test_a_dangling_link_is_not_followed_to_create_its_target(lock, tmp_path):
    target = tmp_path / "created-by-the-victim"
    holder_path(lock).symlink_to(target)
    with pytest.raises(LockDirError):
        with machine_lock(lock, "s-20260101T000000", "k"):
            pass
    assert not target.exists()


def test_a_hard_link_to_another_file_is_refused(lock, victim):
    os.link(victim, lock)
    with pytest.raises(LockDirError, match="2 hard links"):
        with machine_lock(lock, "s-20260101T000000", "k"):
            pass
    assert untouched(victim)


def test_a_fifo_under_the_lock_name_is_refused_without_hanging(lock):
    os.mkfifo(lock)
    with pytest.raises(LockDirError, match="FIFO"):
        with machine_lock(lock, "s-20260101T000000", "k"):
            pass


def test_the_workers_host_claim_refuses_a_link_too(lock, victim):
    claim = lock.with_name(f"{lock.name}.worker")
    claim.symlink_to(victim)
    with pytest.raises(LockDirError):
        HostClaim("h", "me")
    assert untouched(victim)


def test_a_world_writable_directory_without_the_sticky_bit_is_refused(tmp_path):
    directory = tmp_path / "open"
    directory.mkdir()
    directory.chmod(0o777)
    with pytest.raises(LockDirError, match="not sticky"):
        prepare_lock_dir(directory)
    directory.chmod(0o1777)
    prepare_lock_dir(directory)


def test_a_link_to_the_lock_directory_made_by_this_user_is_accepted(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    prepare_lock_dir(tmp_path / "link")


def test_a_lock_file_this_user_creates_is_shared_and_held_exclusively(lock):
    with machine_lock(lock, "s-20260101T000000", "k"):
        assert stat.S_IMODE(lock.stat().st_mode) == 0o666
        assert stat.S_IMODE(holder_path(lock).stat().st_mode) == 0o666
        assert "s-20260101T000000" in holder_path(lock).read_text()
        with pytest.raises(OSError):
            fd = os.open(lock, os.O_RDWR)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            finally:
                os.close(fd)
    assert holder_path(lock).read_text() == ""
