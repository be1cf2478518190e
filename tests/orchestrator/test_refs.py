"""Ref resolution and repo/results resolution in a temporary git repository with two commits."""

from __future__ import annotations

import pytest
from fakebench.fakerepo import git, make_fake_repo

from orchestrator.errors import EXIT_INVALID, RefError
from orchestrator.plan.expand import resolve_sweep
from orchestrator.plan.refs import repo_root, resolve_ref
from orchestrator.spec.schema import SideSpec, SweepSpec


@pytest.fixture
def repo(tmp_path):
    fake = make_fake_repo(tmp_path)
    git(fake.path, "branch", "old", fake.shas[0])
    git(fake.path, "tag", "v1", fake.shas[0])
    git(fake.path, "tag", "-a", "v2", "-m", "annotated", fake.shas[1])
    return fake


@pytest.mark.parametrize("ref, index", [("old", 0), ("v1", 0), ("v2", 1), ("HEAD", 1), ("HEAD~1", 0)])
def test_named_refs_resolve_to_full_commit_shas(repo, ref, index):
    assert resolve_ref(repo.path, ref, "sides.a.ref") == repo.shas[index]


def test_short_and_full_shas_resolve(repo):
    assert resolve_ref(repo.path, repo.shas[0][:8], "k") == repo.shas[0]
    assert resolve_ref(repo.path, repo.shas[1], "k") == repo.shas[1]


@pytest.mark.parametrize("ref", ["nope", "--all", "HEAD~5", "0" * 40])
def test_unresolvable_refs_name_the_key_ref_and_repo(repo, ref):
    with pytest.raises(RefError) as err:
        resolve_ref(repo.path, ref, "sides.mba.ref")
    assert str(err.value) == f"sides.mba.ref: {ref!r} is not a commit in {repo.path}"
    assert err.value.exit_code == EXIT_INVALID


def test_repo_root_from_a_subdirectory_and_non_repos(repo, tmp_path):
    sub = repo.path / "sub" / "dir"
    sub.mkdir(parents=True)
    assert repo_root(sub) == repo.path
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(RefError, match=r"^repo: '.*plain' is not a git repository"):
        repo_root(plain)
    with pytest.raises(RefError, match="is not a directory"):
        repo_root(tmp_path / "missing")


def _spec(**changes) -> SweepSpec:
    return SweepSpec(name="t", sides={"a": SideSpec(ref="old"), "b": SideSpec(ref="HEAD")}, baseline="a",
                     cases=["sac/go2_joystick_flat/mujoco"], **changes)


def test_resolve_sweep_defaults_to_the_repo_of_the_working_directory(repo):
    sub = repo.path / "sub"
    sub.mkdir()
    resolved = resolve_sweep(_spec(), sub)
    assert resolved.repo == repo.path
    assert resolved.results_root == repo.path / "results", "relative results count from the repo top"
    assert not resolved.results_root.exists(), "resolving writes nothing; `run` creates the root"
    assert resolved.shas == {"a": repo.shas[0], "b": repo.shas[1]}


def test_resolve_sweep_explicit_repo_and_errors(repo, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    resolved = resolve_sweep(_spec(repo=str(repo.path)), outside)
    assert resolved.repo == repo.path and resolved.results_root == outside / "results"
    with pytest.raises(RefError, match=r"^repo: not set, and the current directory .* is in no git"):
        resolve_sweep(_spec(), outside)
    with pytest.raises(RefError, match=r"^repo: '.*outside' is not a git repository"):
        resolve_sweep(_spec(repo="."), outside)


def test_a_branch_and_a_tag_of_one_name_on_different_commits_is_an_error_naming_both(repo):
    git(repo.path, "branch", "v1", repo.shas[1])  # tag v1 is on the first commit
    with pytest.raises(RefError) as err:
        resolve_ref(repo.path, "v1~0", "sides.a.ref")
    message = str(err.value)
    assert message.startswith("sides.a.ref: 'v1~0' is ambiguous") and err.value.exit_code == EXIT_INVALID
    assert f"refs/heads/v1 ({repo.shas[1][:12]})" in message
    assert f"refs/tags/v1 ({repo.shas[0][:12]})" in message
    assert resolve_ref(repo.path, "refs/tags/v1", "k") == repo.shas[0]
    assert resolve_ref(repo.path, "refs/heads/v1", "k") == repo.shas[1]


def test_a_branch_named_like_a_short_sha_of_another_commit_is_an_error(repo):
    prefix = repo.shas[0][:7]
    git(repo.path, "branch", prefix, repo.shas[1])
    with pytest.raises(RefError) as err:
        resolve_ref(repo.path, prefix, "k")
    assert f"commit {repo.shas[0][:12]} (by its short SHA)" in str(err.value)
    assert f"refs/heads/{prefix} ({repo.shas[1][:12]})" in str(err.value)
    assert resolve_ref(repo.path, repo.shas[0], "k") == repo.shas[0]


def test_names_of_one_commit_are_not_ambiguous(repo):
    git(repo.path, "branch", "v2", repo.shas[1])  # annotated tag v2 is on the same commit
    assert resolve_ref(repo.path, "v2", "k") == repo.shas[1]
