"""Opening files a bench (or another local user) could have replaced: regular files only, read capped.

A bench knows the paths of its stream, result and log files and may leave anything there: a FIFO
(whose blocking ``open`` would hang the worker until someone writes to it), a symbolic link to
``/dev/zero`` (endless bytes), a device. So every such file is opened with ``O_NOFOLLOW`` (a link
is refused) and ``O_NONBLOCK`` (a FIFO opens at once instead of waiting for a writer), checked with
``fstat`` after the open to be a regular file, and read up to a cap.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

_OPEN_FLAGS = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory"))


class NotRegularFileError(OSError):
    """A path that should hold a regular file holds a link, FIFO, device, socket or directory."""


class TooLargeError(OSError):
    """A file is over the size a reader accepts."""


def open_regular(path: Path, mode: int = os.O_RDONLY) -> BinaryIO | None:
    """``path`` opened (binary; ``mode`` ``os.O_RDONLY`` or ``os.O_WRONLY``) if it is a regular file;
    None if it does not exist; ``NotRegularFileError`` naming what is there otherwise. Never blocks."""
    try:
        fd = os.open(path, mode | _OPEN_FLAGS)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise NotRegularFileError(f"{path} is a symbolic link, not a regular file") from None
        if exc.errno == errno.ENXIO:  # a FIFO opened for writing with no reader
            raise NotRegularFileError(f"{path} is a FIFO, not a regular file") from None
        raise
    try:
        kind = file_kind(os.fstat(fd).st_mode)
        if kind is not None:
            raise NotRegularFileError(f"{path} is {kind}, not a regular file")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb" if mode == os.O_RDONLY else "wb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: Path, max_bytes: int) -> bytes | None:
    """The content of regular file ``path`` (None if it does not exist); ``TooLargeError`` when it
    holds more than ``max_bytes``, read no further than that."""
    with regular_file(path) as file:
        if file is None:
            return None
        data = file.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise TooLargeError(f"{path} holds more than {max_bytes} bytes, over the limit")
    return data


def read_head(path: Path, max_bytes: int) -> bytes:
    """At most the first ``max_bytes`` of regular file ``path``; b'' if it does not exist."""
    with regular_file(path) as file:
        return file.read(max_bytes) if file is not None else b""


def read_tail(path: Path, max_bytes: int) -> bytes:
    """At most the last ``max_bytes`` of regular file ``path``; b'' if it does not exist."""
    with regular_file(path) as file:
        if file is None:
            return b""
        size = os.fstat(file.fileno()).st_size
        file.seek(max(0, size - max_bytes))
        return file.read(max_bytes)


def write_regular(path: Path, data: bytes) -> bool:
    """Replace the content of the existing regular file ``path`` in place; False if it is gone."""
    with regular_file(path, os.O_WRONLY) as file:
        if file is None:
            return False
        file.truncate(0)
        file.write(data)
    return True


def remove_non_regular(directory: Path) -> list[Path]:
    """Remove what in ``directory`` is neither a regular file nor a directory (FIFOs, links, sockets,
    devices a bench left where the worker writes next); returns what it removed."""
    removed = []
    try:
        entries = list(os.scandir(directory))
    except FileNotFoundError:
        return removed
    for entry in entries:
        regular = entry.is_file(follow_symlinks=False) or entry.is_dir(follow_symlinks=False)
        if entry.is_symlink() or not regular:
            Path(entry.path).unlink(missing_ok=True)
            removed.append(Path(entry.path))
    return removed


@contextmanager
def regular_file(path: Path, mode: int = os.O_RDONLY) -> Iterator[BinaryIO | None]:
    """``open_regular`` as a context manager: the file (None if ``path`` does not exist), closed after."""
    file = open_regular(path, mode)
    try:
        yield file
    finally:
        if file is not None:
            file.close()


def file_kind(mode: int) -> str | None:
    """What a non-regular file is ("a FIFO", "a directory", ...); None for a regular file."""
    return next((name for test, name in _KINDS if test(mode)), None)
