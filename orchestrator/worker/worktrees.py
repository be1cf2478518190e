"""A pool of detached git worktrees, one per (repository, SHA), shared by runs and sweeps.

Layout under the shasweep home (``$SHASWEEP_HOME``, default ``~/.cache/shasweep``)::

    worktrees/<repo-id>/<sha>/          the checkout (``git worktree add --detach``)
    worktrees/<repo-id>/<sha>.ready     written once the checkout is complete; mtime = last use
    worktrees/<repo-id>/<sha>.use       flock'ed shared while a run uses the checkout
    worktrees/<repo-id>/.pool.lock      serialises creation and removal within one repository

A run holds a shared lock on ``<sha>.use`` while it uses the checkout; ``prune`` removes a
checkout only if it can take that lock exclusively, so it never pulls a tree from under a run.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock


def shasweep_home() -> Path:
    """The directory holding worktrees, logs and the host lock."""
    return Path(os.environ.get("SHASWEEP_HOME") or Path.home() / ".cache" / "shasweep")


class WorktreeError(RuntimeError):
    """A git operation on the pool failed; the message carries git's own words."""


def _git(repo: Path, *args: str) -> str:
    proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    if proc.returncode != 0:
        raise WorktreeError(f"git {' '.join(args)} in {repo} failed: {proc.stderr.strip()}")
    return proc.stdout.strip()


def _discard_tree(repo: Path, tree: Path) -> None:
    """Remove the checkout ``tree``: unregister it from ``repo`` (if it still exists), then delete it."""
    if repo.is_dir():
        subprocess.run(["git", "-C", str(repo), "worktree", "remove", "--force", str(tree)],
                       capture_output=True)
    shutil.rmtree(tree, ignore_errors=True)


def _repo_id(repo: Path) -> str:
    """A readable, collision-safe directory name for a repository path."""
    digest = hashlib.sha256(str(repo).encode()).hexdigest()[:10]
    return f"{repo.name}-{digest}"


@dataclass(frozen=True)
class PrunedTree:
    """One checkout removed by ``WorktreePool.prune``."""

    repo: str
    sha: str
    path: str


class WorktreePool:
    """Detached checkouts of SHAs, created on first use and reused afterwards."""

    def __init__(self, home: Path | None = None) -> None:
        self.root = (home or shasweep_home()) / "worktrees"

    def _repo_dir(self, repo: Path) -> Path:
        return self.root / _repo_id(repo)

    @contextmanager
    def checkout(self, repo: str | Path, sha: str) -> Iterator[Path]:
        """Yield the worktree of ``sha`` in ``repo``, creating it if needed, held against pruning."""
        repo_path = Path(repo).resolve()
        repo_dir = self._repo_dir(repo_path)
        repo_dir.mkdir(parents=True, exist_ok=True)
        tree = repo_dir / sha
        use_file = repo_dir / f"{sha}.use"
        with open(use_file, "a") as use:
            fcntl.flock(use, fcntl.LOCK_SH)
            try:
                with FileLock(repo_dir / ".pool.lock"):
                    if not (repo_dir / f"{sha}.ready").exists():
                        self._create(repo_path, sha, tree)
                    (repo_dir / f"{sha}.ready").write_text(str(repo_path))
                yield tree
            finally:
                fcntl.flock(use, fcntl.LOCK_UN)

    def _create(self, repo: Path, sha: str, tree: Path) -> None:
        """Check out ``sha`` at ``tree``, clearing any leftover of an interrupted attempt."""
        try:
            _git(repo, "cat-file", "-e", f"{sha}^{{commit}}")
        except WorktreeError:
            raise WorktreeError(f"commit {sha} does not exist in repository {repo}") from None
        if tree.exists():
            _discard_tree(repo, tree)
        for stale in tree.parent.glob(f"{sha}.prepared-*"):  # a new checkout is prepared anew
            stale.unlink()
        _git(repo, "worktree", "prune")
        _git(repo, "worktree", "add", "--detach", str(tree), sha)

    def prune(self, max_age_s: float = 0.0) -> list[PrunedTree]:
        """Remove checkouts unused for more than ``max_age_s`` seconds (0: every unused one).

        Checkouts in use by a run are kept. Runs ``git worktree prune`` in every repository seen.
        """
        removed: list[PrunedTree] = []
        if not self.root.is_dir():
            return removed
        now = time.time()
        for repo_dir in sorted(p for p in self.root.iterdir() if p.is_dir()):
            with FileLock(repo_dir / ".pool.lock"):
                readies = sorted(repo_dir.glob("*.ready"))
                repos = {Path(ready.read_text()) for ready in readies}
                for ready in readies:
                    if now - ready.stat().st_mtime >= max_age_s:
                        pruned = self._remove_if_unused(repo_dir, ready)
                        if pruned is not None:
                            removed.append(pruned)
                for repo in sorted(r for r in repos if r.is_dir()):
                    _git(repo, "worktree", "prune")
        return removed

    def _remove_if_unused(self, repo_dir: Path, ready: Path) -> PrunedTree | None:
        sha = ready.name.removesuffix(".ready")
        tree = repo_dir / sha
        repo = Path(ready.read_text())
        with open(repo_dir / f"{sha}.use", "a") as use:
            try:
                fcntl.flock(use, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return None
            ready.unlink()
            _discard_tree(repo, tree)
        return PrunedTree(repo=str(repo), sha=sha, path=str(tree))
