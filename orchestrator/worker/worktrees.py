"""A pool of detached git worktrees, one per (repository, SHA), shared by runs and sweeps.

Layout under the shasweep home (``$SHASWEEP_HOME``, default ``~/.cache/shasweep``)::

    worktrees/<repo-id>/<sha>/          the checkout (``git worktree add --lock --detach``)
    worktrees/<repo-id>/<sha>.ready     written once the checkout is complete; mtime = last use
    worktrees/<repo-id>/<sha>.clean     the sweep that last found it clean (``checkout``'s ``checked_for``)
    worktrees/<repo-id>/<sha>.use       flock'ed shared while a run uses the checkout
    worktrees/<repo-id>/<sha>.lock      serialises creating, checking and removing that checkout
    worktrees/<repo-id>/.pool.lock      serialises pruning within one repository

A run holds a shared lock on ``<sha>.use`` while it uses the checkout; ``prune`` removes a
checkout only if it can take that lock exclusively, so it never pulls a tree from under a run.

Every checkout is registered *locked* in its repository, with the pool's path as the reason, so a
``git worktree prune`` run by anyone else (another home, a container whose paths this machine cannot
see) leaves it alone; shasweep itself never runs ``git worktree prune`` but forgets only its own
registrations whose directory is gone. A checkout is reused only if it is complete (``.ready``), at
its SHA, and has no modified tracked file (a bench that edits its code would change later runs):
otherwise it is rebuilt. ``git status`` costs tens of milliseconds, so a sweep checks a checkout once
(``checked_for``: the sweep's id, kept in ``<sha>.clean``) and trusts it for its later runs.
``git worktree add`` runs under the exec helper, so a worker killed while checking out takes its
``git`` with it and the half-made tree is rebuilt by the next run.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock, Timeout

from orchestrator.worker.proc import dying_with_parent

_SHA = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?\Z")


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
    if repo.is_dir():  # twice --force: also a locked registration, also one whose tree is missing
        subprocess.run(["git", "-C", str(repo), "worktree", "remove", "--force", "--force", str(tree)],
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
    def checkout(self, repo: str | Path, sha: str, checked_for: str | None = None,
                 submodules: bool = False) -> Iterator[Path]:
        """Yield the worktree of ``sha`` in ``repo``, creating it if needed, held against pruning.
        ``checked_for`` (a sweep id): skip the cleanliness check if it already passed for it.
        ``submodules``: its submodules checked out (recursively) at the commits ``sha`` records;
        otherwise none is (one checked out for an earlier sweep is emptied again)."""
        repo_path = Path(repo).resolve()
        repo_dir = self._repo_dir(repo_path)
        repo_dir.mkdir(parents=True, exist_ok=True)
        tree = repo_dir / sha
        ready, clean = repo_dir / f"{sha}.ready", repo_dir / f"{sha}.clean"
        with open(repo_dir / f"{sha}.use", "a") as use:
            fcntl.flock(use, fcntl.LOCK_SH)
            try:
                with FileLock(repo_dir / f"{sha}.lock"):
                    if not (ready.exists() and _checked(clean, checked_for)):
                        if not (ready.exists() and _is_clean_checkout(tree, sha)):
                            ready.unlink(missing_ok=True)
                            self._create(repo_path, sha, tree)
                        clean.write_text(checked_for or "")
                    _set_submodules(tree, submodules)
                    ready.write_text(str(repo_path))
                yield tree
            finally:
                fcntl.flock(use, fcntl.LOCK_UN)

    def _create(self, repo: Path, sha: str, tree: Path) -> None:
        """Check out ``sha`` at ``tree``, clearing any leftover of an interrupted attempt."""
        try:
            _git(repo, "cat-file", "-e", f"{sha}^{{commit}}")
        except WorktreeError:
            raise WorktreeError(f"commit {sha} does not exist in repository {repo}") from None
        _discard_tree(repo, tree)
        for stale in tree.parent.glob(f"{sha}.prepared-*"):  # a new checkout is prepared anew
            stale.unlink()
        argv = ["git", "-C", str(repo), "worktree", "add", "--lock", "--reason", f"shasweep pool {self.root}",
                "--detach", str(tree), sha]
        proc = subprocess.run(dying_with_parent(argv), capture_output=True, text=True)
        if proc.returncode != 0:
            raise WorktreeError(f"git worktree add {tree} {sha} in {repo} failed: {proc.stderr.strip()}")

    def prune(self, max_age_s: float = 0.0, dry_run: bool = False) -> list[PrunedTree]:
        """Remove checkouts unused for more than ``max_age_s`` seconds (0: every unused one), and
        half-made ones nobody is building; forget this pool's registrations whose tree is gone.

        Checkouts in use by a run are kept. ``dry_run``: only list what would be removed.
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
                        pruned = self._remove_if_unused(repo_dir, ready.name.removesuffix(".ready"),
                                                        Path(ready.read_text()), dry_run)
                        if pruned is not None:
                            removed.append(pruned)
                for repo in sorted(r for r in repos if r.is_dir()):
                    removed += self._remove_half_made(repo_dir, repo, dry_run)
                    if not dry_run:
                        self._forget_missing(repo)
        return removed

    def _remove_half_made(self, repo_dir: Path, repo: Path, dry_run: bool) -> list[PrunedTree]:
        """Trees of this repository without a ``.ready`` marker whose creator is gone."""
        half = [p for p in repo_dir.iterdir() if p.is_dir() and _SHA.match(p.name)
                and not (repo_dir / f"{p.name}.ready").exists()]
        found = [self._remove_if_unused(repo_dir, tree.name, repo, dry_run) for tree in sorted(half)]
        return [tree for tree in found if tree is not None]

    def _forget_missing(self, repo: Path) -> None:
        """Drop the registrations (locked or not) of this pool's checkouts whose directory is gone."""
        for path in _registered_trees(repo):
            if path.parent.parent == self.root and not path.exists():
                _discard_tree(repo, path)

    def _remove_if_unused(self, repo_dir: Path, sha: str, repo: Path, dry_run: bool) -> PrunedTree | None:
        tree = repo_dir / sha
        try:
            with FileLock(repo_dir / f"{sha}.lock", timeout=0), open(repo_dir / f"{sha}.use", "a") as use:
                try:
                    fcntl.flock(use, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    return None
                if not dry_run:
                    (repo_dir / f"{sha}.ready").unlink(missing_ok=True)
                    (repo_dir / f"{sha}.clean").unlink(missing_ok=True)
                    _discard_tree(repo, tree)
        except Timeout:  # being created or checked right now
            return None
        return PrunedTree(repo=str(repo), sha=sha, path=str(tree))


def _set_submodules(tree: Path, checked_out: bool) -> None:
    """Check out ``tree``'s submodules at the commits its HEAD records (``git submodule update --init
    --recursive``), or empty them (``deinit``); nothing to do in a tree without ``.gitmodules``.
    Their URLs are fetched as git fetches any submodule (a local path needs ``protocol.file.allow``)."""
    if not (tree / ".gitmodules").exists():
        return
    args = (["submodule", "update", "--init", "--recursive"] if checked_out
            else ["submodule", "deinit", "--all", "--force"])
    proc = subprocess.run(dying_with_parent(["git", "-C", str(tree), *args]), capture_output=True, text=True)
    if proc.returncode != 0:
        raise WorktreeError(f"git {' '.join(args)} in {tree} failed: {proc.stderr.strip()}")


def _checked(clean: Path, checked_for: str | None) -> bool:
    """Whether the cleanliness check already passed for ``checked_for``."""
    try:
        return checked_for is not None and clean.read_text() == checked_for
    except FileNotFoundError:
        return False


def _is_clean_checkout(tree: Path, sha: str) -> bool:
    """``tree`` is a checkout at ``sha`` without modified tracked files (untracked files, such as
    ``__pycache__``, are allowed)."""
    if not (tree / ".git").exists():
        return False
    try:
        head = _git(tree, "rev-parse", "HEAD")
        status = _git(tree, "status", "--porcelain", "--untracked-files=no")
    except WorktreeError:
        return False
    return head == sha and not status


def _registered_trees(repo: Path) -> list[Path]:
    """The worktree paths ``repo`` has registered (``git worktree list --porcelain``)."""
    try:
        listing = _git(repo, "worktree", "list", "--porcelain")
    except WorktreeError:
        return []
    return [Path(line.removeprefix("worktree ")) for line in listing.splitlines()
            if line.startswith("worktree ")]
