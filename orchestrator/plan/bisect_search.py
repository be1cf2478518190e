"""The search of ``shasweep bisect``: which commit of a first-parent history made a gate FAIL?

``first_parent_history`` lists the commits after ``good`` up to and including ``bad`` (oldest
first). ``BisectSearch`` is a pure state machine over that list: it is told what each tested
commit turned out to be (``mark``) and says which commit to test next (``next_commit``) or what
the search concluded (``conclusion``). The first bad commit lies in ``(last good, first bad]``;
the next commit to test is the testable one nearest the middle of that range, so a history of
``n`` commits takes at most ``ceil(log2(n))`` steps when nothing is skipped.

* ``good``/``bad``: the step's gate PASSed/FAILed with the commit as candidate and ``good`` as
  baseline;
* ``skip``: the commit's bench failed; like ``git bisect skip``, the commit is never tested again
  and, if it borders the answer, the answer names every commit it cannot tell apart;
* ``undecided``: the step's gate stayed INCONCLUSIVE; the search stops there with the range that
  remains.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.errors import RefError
from orchestrator.plan.refs import git

GOOD, BAD, SKIP, UNDECIDED = "good", "bad", "skip", "undecided"
MARKS: tuple[str, ...] = (GOOD, BAD, SKIP, UNDECIDED)
FOUND, AMBIGUOUS = "found", "ambiguous"  # conclusion statuses besides UNDECIDED


@dataclass(frozen=True)
class Commit:
    sha: str
    subject: str


@dataclass(frozen=True)
class Conclusion:
    """Where the search ended: ``found`` (``first_bad`` set), ``ambiguous`` (only skipped commits
    are left to tell apart) or ``undecided`` (a step stayed INCONCLUSIVE)."""

    status: str
    first_bad: str | None
    remaining: tuple[str, ...]  # the commits that may be the first bad one, oldest first
    skipped: tuple[str, ...]  # every commit skipped so far, oldest first


@dataclass(frozen=True)
class BisectSearch:
    """The commits after ``good`` through ``bad`` (oldest first) and what each tested one was.

    The last commit is ``bad`` and is known bad (the preflight found it so); nothing else is
    assumed.
    """

    commits: tuple[str, ...]
    marks: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.commits:
            raise ValueError("a bisect needs at least one commit after good")
        unknown = set(self.marks) - set(self.commits)
        if unknown:
            raise ValueError(f"marks for commits outside the history: {sorted(unknown)}")

    def mark(self, sha: str, mark: str) -> BisectSearch:
        """The search with ``sha`` marked ``mark`` (one of ``MARKS``)."""
        if mark not in MARKS:
            raise ValueError(f"unknown mark {mark!r}; one of {MARKS}")
        return BisectSearch(self.commits, {**self.marks, sha: mark})

    def bounds(self) -> tuple[int, int]:
        """``(lo, hi)``: index of the last good commit before the first bad one (-1: ``good``
        itself) and of the first bad commit (the last commit when none is marked)."""
        bad = [i for i, sha in enumerate(self.commits) if self.marks.get(sha) == BAD]
        hi = min(bad, default=len(self.commits) - 1)
        good = [i for i, sha in enumerate(self.commits[:hi]) if self.marks.get(sha) == GOOD]
        return max(good, default=-1), hi

    def next_commit(self) -> str | None:
        """The commit to test next, or ``None`` when the search has concluded."""
        lo, hi = self.bounds()
        inside = range(lo + 1, hi)
        if any(self.marks.get(self.commits[i]) == UNDECIDED for i in inside):
            return None
        testable = [i for i in inside if self.commits[i] not in self.marks]
        if not testable:
            return None
        middle = lo + (hi - lo) // 2
        return self.commits[min(testable, key=lambda i: (abs(i - middle), i))]

    def conclusion(self) -> Conclusion | None:
        """What the search found, or ``None`` while there is a commit left to test."""
        if self.next_commit() is not None:
            return None
        lo, hi = self.bounds()
        remaining = self.commits[lo + 1:hi + 1]
        skipped = tuple(sha for sha in self.commits if self.marks.get(sha) == SKIP)
        if any(self.marks.get(sha) == UNDECIDED for sha in remaining):
            return Conclusion(UNDECIDED, None, remaining, skipped)
        if len(remaining) == 1:
            return Conclusion(FOUND, remaining[0], remaining, skipped)
        return Conclusion(AMBIGUOUS, None, remaining, skipped)


def first_parent_history(repo: Path, good: str, bad: str) -> list[Commit]:
    """The commits after ``good`` up to and including ``bad`` on ``bad``'s first-parent line, oldest
    first; ``RefError`` (naming ``--good``) when ``good`` is not on that line or equals ``bad``."""
    if good == bad:
        raise RefError(f"{good[:12]} is both good and bad; nothing to bisect", "--good")
    done = git(repo, "log", "--first-parent", "--reverse", "--format=%H%x00%P%x00%s",
               "--end-of-options", f"{good}..{bad}")
    if done.returncode != 0:
        raise RefError(f"cannot list the history {good[:12]}..{bad[:12]}: {done.stderr.strip()}", "--bad")
    entries = [line.split("\x00", 2) for line in done.stdout.splitlines() if line]
    if not entries or (entries[0][1].split() or [""])[0] != good:
        raise RefError(f"{good[:12]} is not an ancestor of {bad[:12]} on its first-parent history",
                       "--good")
    return [Commit(sha=sha, subject=subject) for sha, _, subject in entries]
