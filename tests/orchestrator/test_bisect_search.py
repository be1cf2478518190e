"""The bisect search as a state machine, driven by an oracle over every history length and step
position, with seeded random skips; and the first-parent walk on real git histories."""

from __future__ import annotations

import math
import random
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fakebench.fakerepo import git  # noqa: E402

from orchestrator.errors import RefError  # noqa: E402
from orchestrator.plan.bisect_search import (  # noqa: E402
    AMBIGUOUS,
    BAD,
    FOUND,
    GOOD,
    SKIP,
    UNDECIDED,
    BisectSearch,
    first_parent_history,
)


def drive(n: int, first_bad: int, skipped: frozenset[int] = frozenset(),
          undecided: frozenset[int] = frozenset()) -> tuple[BisectSearch, list[int]]:
    """Run the search over commits 0..n-1 whose first bad one is ``first_bad``; the tested indices."""
    commits = tuple(f"{i:040x}" for i in range(n))
    search = BisectSearch(commits, {commits[-1]: BAD})
    tested = []
    while (sha := search.next_commit()) is not None:
        index = commits.index(sha)
        assert index not in tested, "a commit is never tested twice"
        tested.append(index)
        mark = (SKIP if index in skipped else UNDECIDED if index in undecided
                else BAD if index >= first_bad else GOOD)
        search = search.mark(sha, mark)
    return search, tested


@pytest.mark.parametrize("n", [*range(1, 40), 63, 64, 100, 255, 300])
def test_every_step_position_is_found_within_ceil_log2_steps(n):
    for first_bad in range(n):
        search, tested = drive(n, first_bad)
        conclusion = search.conclusion()
        assert conclusion.status == FOUND and conclusion.first_bad == f"{first_bad:040x}"
        assert len(tested) <= math.ceil(math.log2(n)) if n > 1 else not tested


@pytest.mark.parametrize("seed", range(40))
def test_skipped_commits_never_hide_the_answer(seed):
    rng = random.Random(seed)
    n = rng.randint(2, 80)
    first_bad = rng.randrange(n)
    skipped = frozenset(i for i in range(n - 1) if rng.random() < 0.25)
    search, tested = drive(n, first_bad, skipped)
    conclusion = search.conclusion()
    remaining = [int(sha, 16) for sha in conclusion.remaining]
    assert first_bad in remaining, "the first bad commit is always among what remains"
    assert remaining == list(range(remaining[0], remaining[-1] + 1)), "the remaining range is contiguous"
    assert set(remaining[:-1]) <= skipped, "only skipped commits are left undistinguished"
    if conclusion.status == FOUND:
        assert conclusion.first_bad == f"{first_bad:040x}"
    else:
        assert conclusion.status == AMBIGUOUS and len(remaining) >= 2
    assert [int(s, 16) for s in conclusion.skipped] == sorted(skipped & set(tested))


def test_a_skipped_commit_just_before_the_step_leaves_both_candidates():
    search, _ = drive(16, 9, skipped=frozenset({8}))
    conclusion = search.conclusion()
    assert conclusion.status == AMBIGUOUS and conclusion.remaining == (f"{8:040x}", f"{9:040x}")


def test_a_skipped_commit_just_after_the_step_is_named_and_the_answer_found():
    search, tested = drive(16, 9, skipped=frozenset({10}))
    conclusion = search.conclusion()
    assert conclusion.status == FOUND and conclusion.first_bad == f"{9:040x}"
    assert 10 not in tested or conclusion.skipped == (f"{10:040x}",)


@pytest.mark.parametrize("seed", range(20))
def test_an_undecided_step_stops_with_the_range_that_remains(seed):
    rng = random.Random(seed)
    n = rng.randint(4, 64)
    first_bad = rng.randrange(n)
    _, tested = drive(n, first_bad)
    stuck = tested[rng.randrange(len(tested))]
    search, again = drive(n, first_bad, undecided=frozenset({stuck}))
    conclusion = search.conclusion()
    assert again[-1] == stuck, "the search stops at the undecided step"
    assert conclusion.status == UNDECIDED and conclusion.first_bad is None
    remaining = [int(sha, 16) for sha in conclusion.remaining]
    assert first_bad in remaining and stuck in remaining


def test_bad_marks_are_validated():
    with pytest.raises(ValueError):
        BisectSearch(())
    with pytest.raises(ValueError):
        BisectSearch(("a" * 40,)).mark("a" * 40, "maybe")


def _commit(repo: Path, message: str) -> str:
    git(repo, "commit", "-q", "--allow-empty", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def test_first_parent_history_follows_first_parents_and_checks_good(tmp_path):
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    good = _commit(repo, "good")
    a = _commit(repo, "a")
    git(repo, "checkout", "-q", "-b", "side", good)
    side = _commit(repo, "on a side branch")
    git(repo, "checkout", "-q", "main")
    git(repo, "merge", "-q", "--no-ff", "-m", "merge side", "side")
    merge = git(repo, "rev-parse", "HEAD")
    bad = _commit(repo, "bad")

    history = first_parent_history(repo, good, bad)
    assert [c.sha for c in history] == [a, merge, bad], "the side branch's commit is not walked"
    assert [c.subject for c in history] == ["a", "merge side", "bad"]
    with pytest.raises(RefError, match="--good"):
        first_parent_history(repo, side, bad)  # reachable, but not on bad's first-parent line
    with pytest.raises(RefError, match="--good"):
        first_parent_history(repo, bad, good)
    with pytest.raises(RefError, match="nothing to bisect"):
        first_parent_history(repo, bad, bad)
