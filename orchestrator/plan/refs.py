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
_SHORT_SHA = re.compile(r"[0-9a-f]{4,63}\Z")
_LEADING_NAME = re.compile(r"(?:(?!@\{)[^~^:])*")  # a revision's name, before ~ ^ : or @{
_SPECIAL_NAMES = frozenset({"@", "HEAD", "FETCH_HEAD", "ORIG_HEAD", "MERGE_HEAD", "CHERRY_PICK_HEAD"})


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

    Raises ``RefError`` naming ``key`` when ``ref`` names no commit, or more than one
    (``check_unambiguous``).
    """
    check_unambiguous(repo, ref, key)
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


def check_unambiguous(repo: Path, ref: str, key: str) -> None:
    """``RefError`` naming ``key`` and every candidate when the name at the start of ``ref`` (before
    any ``~``, ``^``, ``:`` or ``@{``) could mean different commits: a branch, a tag, a remote branch
    or a short SHA prefix. git would pick one silently; written in full (``refs/tags/v1``,
    ``refs/heads/v1``, the full SHA) it means one."""
    name = _LEADING_NAME.match(ref)[0]  # type: ignore[index]
    if not name or name.startswith("refs/") or name in _SPECIAL_NAMES or _FULL_SHA.match(name):
        return
    candidates = {**_refs_named(repo, name), **_commits_prefixed(repo, name)}
    if len(set(candidates.values())) > 1:
        listed = ", ".join(what if what.startswith("commit ") else f"{what} ({sha[:12]})"
                           for what, sha in sorted(candidates.items()))
        written = "".join(f"{what}, " for what in sorted(candidates) if what.startswith("refs/"))
        raise RefError(f"{ref!r} is ambiguous in {repo}: {name!r} names {listed}; write it in full "
                       f"({written}or the full SHA)", key)


def _refs_named(repo: Path, name: str) -> dict[str, str]:
    """The refs git's rules would take ``name`` for (``git help revisions``), with their commits."""
    wanted = [f"refs/{name}", f"refs/tags/{name}", f"refs/heads/{name}", f"refs/remotes/{name}",
              f"refs/remotes/{name}/HEAD"]
    done = git(repo, "for-each-ref", "--format=%(refname) %(objectname) %(*objectname)", *wanted[:4])
    found = {}
    for line in done.stdout.splitlines():
        refname, objectname, *peeled = line.split(" ")
        if refname in wanted:
            found[refname] = next((p for p in peeled if p), objectname)  # an annotated tag's commit
    return found


def _commits_prefixed(repo: Path, name: str) -> dict[str, str]:
    """The commits whose SHA starts with ``name`` (when it looks like a short SHA)."""
    if not _SHORT_SHA.match(name):
        return {}
    objects = git(repo, "rev-parse", "--disambiguate=" + name).stdout.split()
    if not objects:
        return {}
    typed = subprocess.run(["git", "-C", str(repo), "cat-file", "--batch-check=%(objectname) %(objecttype)"],
                           input="\n".join(objects) + "\n", capture_output=True, text=True, check=False)
    commits = [line.split()[0] for line in typed.stdout.splitlines() if line.endswith(" commit")]
    return {f"commit {sha[:12]} (by its short SHA)": sha for sha in commits}
