"""Writing files so a reader never sees half of one, and cleaning up after writers that died.

Every file shasweep writes under a results root goes to ``.<name>.<pid>@<host id>.tmp`` in the
target's directory, is fsynced, renamed into place, and the directory is fsynced, so after a crash a
path holds either its old content or its new content. A temporary file whose writer process is gone
is stale: the next writer in that directory removes it, and so does ``shasweep gc``. A fleet shares
its results root, and a pid means something only on the host that wrote it, so only that host
(``contract.host_id``) judges a temporary file stale; a file of the older form ``.<name>.<pid>.tmp``
names no host and is stale only once it is ``STALE_TEMP_AGE_S`` old.

A group of files (a run's steps and runs files, ``write_in_order``) shares one barrier instead: every
content is written to its temporary file, one ``syncfs`` makes them all durable, and only then are
they renamed into place, in order. What this guarantees and what it does not is in
docs/design.md, "Results".
"""

from __future__ import annotations

import ctypes
import errno
import os
import re
import shutil
import stat
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from orchestrator.contract import host_id

_LIBC = ctypes.CDLL(None, use_errno=True)
_TEMP = re.compile(r"\.(?P<name>.+)\.(?P<pid>\d+)(@(?P<host>[A-Za-z0-9._-]+))?\.tmp\Z")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
STALE_TEMP_AGE_S = 3600.0  # a temp file this old is stale even if its pid is alive (pids are reused)


def temp_path(path: Path) -> Path:
    """The temporary name ``path`` is written under by this process on this host."""
    return path.with_name(f".{path.name}.{os.getpid()}@{_this_host()}.tmp")


def fsync_dir(directory: Path) -> None:
    """Make a rename in ``directory`` durable."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextmanager
def staged(path: Path) -> Iterator[Path]:
    """Yield a temporary path to write ``path``'s content to; on success it is fsynced and renamed
    into place, on any error removed. Stale temporary files of dead writers nearby are removed first."""
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(path.parent)
    tmp = temp_path(path)
    try:
        yield tmp
        fsync_file(tmp)
        os.replace(tmp, path)
        fsync_dir(path.parent)
    finally:
        tmp.unlink(missing_ok=True)


def write_bytes_atomic(path: Path, data: bytes) -> Path:
    with staged(path) as tmp:
        tmp.write_bytes(data)
    return path


def write_text_atomic(path: Path, text: str) -> Path:
    return write_bytes_atomic(path, text.encode("utf-8"))


def write_text_unsynced(path: Path, text: str) -> Path:
    """Write ``path`` through a temporary file renamed into place, without an fsync: for what can be
    made again (a site's pages, its cache), where a reader must never see half a file but a crash may
    lose the write."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_path(path)
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def link_or_copy(source: Path, target: Path) -> bool:
    """Put ``source``'s content at ``target`` (a hard link where both are on one file system, else a
    copy), renamed into place; False, and nothing written, when ``source`` is not a regular file (a
    link, a FIFO: never followed)."""
    try:
        fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_path(target)
    try:
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode):
            return False
        if not _linked(source, tmp, opened):  # the name may have been replaced since it was opened
            with open(fd, "rb", closefd=False) as reader, open(tmp, "wb") as writer:
                shutil.copyfileobj(reader, writer)
        os.replace(tmp, target)
        return True
    finally:
        os.close(fd)
        tmp.unlink(missing_ok=True)


def _linked(source: Path, tmp: Path, opened: os.stat_result) -> bool:
    """Whether ``tmp`` is now a hard link to the file ``opened`` describes (else nothing is at ``tmp``)."""
    try:
        os.link(source, tmp, follow_symlinks=False)
    except OSError:
        return False
    made = os.lstat(tmp)
    if (made.st_dev, made.st_ino) == (opened.st_dev, opened.st_ino):
        return True
    tmp.unlink()
    return False


def write_with(path: Path, writer: Callable[[Path], None]) -> Path:
    """``writer(tmp)`` writes the content; then it is moved into place atomically."""
    with staged(path) as tmp:
        writer(tmp)
    return path


def move_file(source: Path, target: Path) -> None:
    """Move ``source`` to ``target``: a rename, or across file systems (a results root whose ``runs/``
    is a link to another disk) a copy, fsynced and renamed into place, then ``source`` removed."""
    try:
        os.replace(source, target)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        with staged(target) as tmp:
            shutil.copyfile(source, tmp)
        source.unlink()
        return
    fsync_dir(target.parent)


def copy_tree(source: Path, target: Path) -> None:
    """Copy directory ``source`` (regular files only, one level) to ``target``, every file and the
    directory fsynced; ``target`` must not exist."""
    target.mkdir()
    for path in source.iterdir():
        shutil.copyfile(path, target / path.name)
        fsync_file(target / path.name)
    fsync_dir(target)
    fsync_dir(target.parent)


def write_in_order(writers: list[tuple[Path, Callable[[Path], None]]]) -> None:
    """Write several files as a group: every content staged, one barrier (``sync_files``) that makes
    them all durable, then each renamed into place in list order.
    Any failure before the renames leaves every target as it was. The renames themselves become
    durable with the next barrier on that file system (docs/design.md, "Results")."""
    temps = []
    try:
        for path, writer in writers:
            path.parent.mkdir(parents=True, exist_ok=True)
            remove_stale_temps(path.parent)
            temps.append(temp_path(path))
            writer(temps[-1])
        sync_files(temps)
        for (path, _), tmp in zip(writers, temps, strict=True):
            os.replace(tmp, path)
    finally:
        for tmp in temps:
            tmp.unlink(missing_ok=True)


def sync_files(paths: list[Path]) -> None:
    """Make the content of ``paths`` durable with one ``syncfs`` per file system they lie on (it
    writes back everything dirty there); where the C library has none, or it fails, an ``fsync`` of
    each file."""
    by_device: dict[int, list[Path]] = {}
    for path in paths:
        by_device.setdefault(os.stat(path).st_dev, []).append(path)
    for group in by_device.values():
        if not _syncfs(group[0]):
            for path in group:
                fsync_file(path)


def _syncfs(path: Path) -> bool:
    fd = os.open(path, os.O_RDONLY)
    try:
        return _LIBC.syncfs(fd) == 0
    except AttributeError:  # no syncfs in this C library
        return False
    finally:
        os.close(fd)


def is_stale_temp(path: Path, now: float | None = None) -> bool:
    """Whether ``path`` is a temporary file of this host whose writer is gone (or that is very old);
    another host's is never this host's to judge (see the module docstring)."""
    match = _TEMP.match(path.name)
    if match is None or match["host"] not in (None, _this_host()):
        return False
    try:
        age = (now or time.time()) - path.lstat().st_mtime
    except FileNotFoundError:
        return False
    return age > STALE_TEMP_AGE_S or match["host"] is not None and not _alive(int(match["pid"]))


def stale_temps(directory: Path) -> list[Path]:
    try:
        return [p for p in directory.iterdir() if p.name.endswith(".tmp") and is_stale_temp(p)]
    except (FileNotFoundError, NotADirectoryError):
        return []


def remove_stale_temps(directory: Path) -> list[Path]:
    """Remove the stale temporary files directly in ``directory``; returns them."""
    removed = stale_temps(directory)
    for path in removed:
        path.unlink(missing_ok=True)
    return removed


def _this_host() -> str:
    return _UNSAFE.sub("_", host_id())


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True
