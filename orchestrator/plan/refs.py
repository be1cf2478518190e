"""Git lookups done on the client before a sweep is dispatched: repository roots and ref -> full SHA.

Every git call is an argv list (never a shell); refs are passed after ``--end-of-options`` so a ref
that looks like an option cannot be taken for one.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from orchestrator.errors import RefError

_FULL_SHA = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?\Z")  # SHA-1 or SHA-256 object names


def git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``git -C repo args...`` and return the completed process (never raises on exit status)."""
    try:
        return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=False)
    except FileNotFoundError:
        raise RefError("the 'git' executable is not on PATH") from None


def repo_root(path: Path, key: str = "repo") -> Path:
    """The top level of the git work tree holding ``path``; ``RefError`` naming ``key`` if there is none."""
    if not path.is_dir():
        raise RefError(f"{str(path)!r} is not a directory", key)
    done = git(path, "rev-parse", "--show-toplevel")
    if done.returncode != 0 or not done.stdout.strip():
        raise RefError(f"{str(path)!r} is not a git repository", key)
    return Path(done.stdout.strip())


def find_repo_root(path: Path) -> Path | None:
    """Like ``repo_root`` but ``None`` when ``path`` is not inside a git work tree."""
    try:
        return repo_root(path)
    except RefError:
        return None


def resolve_ref(repo: Path, ref: str, key: str) -> str:
    """The full SHA (40 hex; 64 in SHA-256 repos) of the commit ``ref`` names in ``repo``.

    Raises ``RefError`` naming ``key`` when ``ref`` names no commit.
    """
    done = git(repo, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}")
    sha = done.stdout.strip()
    if done.returncode != 0 or not _FULL_SHA.match(sha):
        raise RefError(f"{ref!r} is not a commit in {repo}", key)
    return sha


def check_directory(repo: Path, sha: str, directory: str, key: str, where: str) -> None:
    """``RefError`` naming ``key`` unless ``directory`` (relative to the repository root) is a
    directory in commit ``sha``; ``where`` names what uses that commit (e.g. ``sides.new``)."""
    path = directory.strip("/")
    if path in ("", "."):
        return
    done = git(repo, "cat-file", "-t", f"{sha}:{path}")
    if done.stdout.strip() != "tree":
        raise RefError(f"directory {directory!r} does not exist in commit {sha[:12]} of {where}", key)
