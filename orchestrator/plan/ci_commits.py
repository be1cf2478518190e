"""The two commits ``shasweep ci`` compares: the head, and the merge base of the base and the head.

Comparing with the merge base (not the base branch's tip) measures only what the pull request
changed. A clone that lacks a commit is the usual CI mistake (a shallow checkout): it is named
with the one-line fix, never left to a git message.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from orchestrator.errors import RefError
from orchestrator.plan.refs import git, resolve_ref

DEFAULT_BASE = "origin/HEAD"  # the remote's default branch, in a clone
FETCH_FIX = ("check out with the whole history (actions/checkout: `fetch-depth: 0`; GitLab: "
             "`GIT_DEPTH: 0`), or run `git fetch --unshallow origin`")


@dataclass(frozen=True)
class CiCommits:
    """``head`` against ``merge_base`` (full SHAs), as the refs they came from."""

    base_ref: str
    head_ref: str
    head: str
    merge_base: str

    @property
    def same(self) -> bool:
        """Head is the merge base: nothing changed, the sweep compares the machine with itself (A/A)."""
        return self.head == self.merge_base


def ci_commits(repo: Path, base_ref: str, head_ref: str) -> CiCommits:
    """Resolve ``head_ref`` and the merge base of ``base_ref`` and ``head_ref`` in ``repo``; a
    ``RefError`` (exit 2) naming ``--base`` or ``--head`` when one is not there, with the fix."""
    shallow = git(repo, "rev-parse", "--is-shallow-repository").stdout.strip() == "true"
    head = _commit(repo, head_ref, "--head", shallow)
    base = _commit(repo, base_ref, "--base", shallow)
    done = git(repo, "merge-base", "--end-of-options", base, head)
    merge_base = done.stdout.strip()
    if done.returncode != 0 or not merge_base:
        if shallow:
            raise RefError(f"this clone is shallow and holds no common ancestor of {base_ref!r} and "
                           f"{head_ref!r}: {FETCH_FIX}", "--base")
        raise RefError(f"{base_ref!r} and {head_ref!r} have no common ancestor in {repo}", "--base")
    return CiCommits(base_ref=base_ref, head_ref=head_ref, head=head, merge_base=merge_base)


def _commit(repo: Path, ref: str, key: str, shallow: bool) -> str:
    """The full SHA of ``ref``; when it names no commit here, the error says how to get it."""
    if git(repo, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}").returncode == 0:
        return resolve_ref(repo, ref, key)  # also refuses a name that could mean several commits
    if ref == DEFAULT_BASE:
        raise RefError(f"no base given and {DEFAULT_BASE} does not exist in {repo} (a clone has it); "
                       "pass --base REF or set tool.shasweep.base", key)
    if shallow:
        raise RefError(f"{ref!r} is not in this shallow clone: {FETCH_FIX}", key)
    raise RefError(f"{ref!r} is not a commit in {repo}; if it exists on the remote, run "
                   f"`git fetch origin {ref}`", key)
