"""Replacing a whole directory at once: what compaction uses to turn a partition's files into others.

``exchange(a, b)`` swaps two directories in one step (Linux ``renameat2(RENAME_EXCHANGE)``), so a
reader listing ``b`` sees either every old file or every new one, never a mix. Where the kernel or
file system cannot exchange (another OS, NFS), it falls back to two renames (``b`` aside, ``a`` in):
between them ``b`` is briefly absent, and a crash there leaves it absent until ``put_in_place``
runs again (``store.compact`` recovers that way).
"""

from __future__ import annotations

import ctypes
import errno
import os
from pathlib import Path

from orchestrator.store.atomic import fsync_dir

_RENAME_EXCHANGE = 2
_AT_FDCWD = -100
_UNSUPPORTED = {errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.EXDEV}


def _renameat2() -> ctypes._CFuncPtr | None:
    try:
        function = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    function.restype = ctypes.c_int
    return function


_EXCHANGE = _renameat2()


def exchange(a: Path, b: Path) -> bool:
    """Swap directories ``a`` and ``b`` atomically; False (nothing done) where that is unsupported."""
    if _EXCHANGE is None:
        return False
    if _EXCHANGE(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in _UNSUPPORTED:
        return False
    raise OSError(code, f"exchanging {a} and {b}: {os.strerror(code)}")


def put_in_place(new: Path, live: Path, aside: Path, new_inode: int) -> None:
    """Make directory ``new`` (inode ``new_inode``) the one at ``live``; what was live ends up at
    ``new`` (exchanged) or at ``aside`` (the fallback).

    Atomic where ``exchange`` works; else ``live`` is renamed to ``aside`` and ``new`` to ``live``.
    Safe to call again after a crash at any point: the inode says whether ``live`` is already new."""
    if inode(live) == new_inode or inode(new) != new_inode:
        return
    live.parent.mkdir(parents=True, exist_ok=True)
    if not (live.exists() and exchange(new, live)):
        if live.exists():
            os.replace(live, aside)
        os.replace(new, live)
    fsync_dir(live.parent)
    fsync_dir(new.parent)


def inode(path: Path) -> int | None:
    """The inode number of ``path``; None when there is nothing there."""
    try:
        return path.stat().st_ino
    except FileNotFoundError:
        return None
