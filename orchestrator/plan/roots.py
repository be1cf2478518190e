"""The results root of a command: where it is (relative to the git repository of the current
directory) and whether shasweep may write there. Light on purpose: every command that reads results
starts with it."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from orchestrator.errors import InvalidInputError
from orchestrator.plan.refs import find_repo_root

# A results root may not be one of these directories, nor lie anywhere under the trees.
SYSTEM_ROOTS: frozenset[str] = frozenset({"/", "/home", "/media", "/mnt", "/opt", "/root", "/srv", "/tmp",
                                          "/var"})
SYSTEM_TREES: tuple[str, ...] = ("/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32",
                                 "/proc", "/run", "/sbin", "/sys", "/usr", "/var/cache", "/var/lib",
                                 "/var/log", "/var/run", "/var/spool")



def results_root_for(results: str | Path, cwd: Path) -> Path:
    """``results`` made absolute; a relative path counts from the git repo holding ``cwd`` (else ``cwd``)."""
    path = (find_repo_root(cwd) or cwd) / results
    try:
        return path.resolve()
    except (RuntimeError, OSError) as exc:  # a symlink loop
        raise InvalidInputError(f"cannot resolve {str(path)!r}: {exc}", "results") from None


def check_results_root(results_root: Path, key: str = "results") -> None:
    """``results_root`` is (or can be made) a writable directory outside the system's own; writes
    nothing, so ``plan`` leaves no trace."""
    system = _system_dir(results_root)
    if system is not None:
        raise InvalidInputError(f"cannot write to {str(results_root)!r}: it is the system directory "
                                f"{system} or under it; choose a results directory of your own", key)
    existing = next(p for p in (results_root, *results_root.parents) if p.exists())
    if not existing.is_dir():
        raise InvalidInputError(f"cannot write to {str(results_root)!r}: {existing} is not a directory", key)
    if not os.access(existing, os.W_OK | os.X_OK):
        raise InvalidInputError(f"cannot write to {str(results_root)!r}: {existing} is not writable", key)


def _system_dir(path: Path) -> str | None:
    """The system directory ``path`` is or is under, if any."""
    text = str(path)
    if text in SYSTEM_ROOTS:
        return text
    return next((d for d in SYSTEM_TREES if text == d or text.startswith(d + "/")), None)


def check_writable(results_root: Path, key: str = "results") -> None:
    """Check ``results_root``, create it if needed and prove a file can be written there."""
    check_results_root(results_root, key)
    try:
        results_root.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=results_root, prefix=".probe", suffix=".tmp"):
            pass
    except OSError as exc:
        reason = exc.strerror or exc
        raise InvalidInputError(f"cannot write to {str(results_root)!r}: {reason}", key) from None
