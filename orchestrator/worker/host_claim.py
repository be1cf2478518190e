"""A host is one bench worker: a ``shasweep worker`` claims its host id for as long as it lives.

Two workers with one host id (on one machine the default id is the hostname) would each be handed
some of a sweep's runs, pinned to different CPUs: an A/B of two CPUs. So the worker holds an OS
lock, ``<host lock>.worker`` next to the host lock (``worker.machine_lock``, same directory, shared
by every worker of the machine), from start to exit, with a note saying who holds it. A second
worker claiming a held id is refused with one line naming both. The kernel drops the lock when its
holder dies, so a worker restarted after a crash claims the id again at once.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from orchestrator.contract import HOST_ID_VAR
from orchestrator.errors import InvalidInputError
from orchestrator.worker.machine_lock import host_lock_path, open_shared, prepare_lock_dir

MAX_NOTE_BYTES = 512


class HostTakenError(InvalidInputError):
    """Another live bench worker holds this host id."""


def claim_path(host: str) -> Path:
    lock = host_lock_path(host)
    return lock.with_name(f"{lock.name}.worker")


class HostClaim:
    """The claim of one host id, held until ``release`` or the process's exit."""

    def __init__(self, host: str, me: str) -> None:
        """Claim ``host`` for this process, described as ``me`` (e.g. ``pid 12, CPUs 0-3``);
        ``HostTakenError`` names the holder when another live process has it."""
        self.host, self.path = host, claim_path(host)
        prepare_lock_dir(self.path.parent)
        self._fd = open_shared(self.path)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(self._fd, MAX_NOTE_BYTES, 0).decode("utf-8", errors="replace").strip()
            os.close(self._fd)
            raise HostTakenError(
                f"host id {host!r} is already held by the live bench worker {holder or '(no note)'}; "
                f"this worker ({me}) is refused: a host is one bench worker (stop that one, or give this "
                f"one its own {HOST_ID_VAR})") from None
        self.note(me)

    def note(self, text: str) -> None:
        """Say who holds the claim (what a refused worker's error names)."""
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, text.encode()[:MAX_NOTE_BYTES], 0)

    def release(self) -> None:
        os.ftruncate(self._fd, 0)
        os.close(self._fd)  # closing the descriptor drops the lock
