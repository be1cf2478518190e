"""``shasweep comment`` against a local GitHub / GitLab stand-in (``fake_forge``): it creates one
comment, then edits that one in place (found by its marker among pages of others); where it cannot
post (a fork, no token, no pull request) it says why and exits 0; a refusal exits 3 naming it; a
redirect is never followed (the token goes nowhere else)."""

from __future__ import annotations

import json

import pytest
from fake_forge import ForgeServer

from orchestrator.cli.main import main
from orchestrator.errors import EXIT_OK, EXIT_RUN_FAILED
from orchestrator.render.ci_comment import MARKER
from orchestrator.session.pr_comment import post_comment


@pytest.fixture
def forge():
    with ForgeServer() as running:
        yield running


def github(tmp_path, forge, *, fork: bool = False, token: str | None = "t0ken", number: int | None = 5
           ) -> dict:
    event = {"before": "1" * 40, "after": "2" * 40}
    if number is not None:
        head_repo = {"full_name": "someone/r" if fork else "o/r"}
        event = {"pull_request": {"number": number, "base": {"sha": "b" * 40, "repo": {"full_name": "o/r"}},
                                  "head": {"sha": "h" * 40, "repo": head_repo}}}
    (tmp_path / "event.json").write_text(json.dumps(event))
    env = {"GITHUB_ACTIONS": "true", "GITHUB_EVENT_PATH": str(tmp_path / "event.json"),
           "GITHUB_REPOSITORY": "o/r", "GITHUB_API_URL": forge.url}
    return {**env, "GITHUB_TOKEN": token} if token else env


def body(tmp_path, text: str):
    path = tmp_path / "comment.md"
    path.write_text(f"{MARKER}\n{text}\n")
    return path


def test_github_creates_the_comment_then_updates_it_in_place(tmp_path, forge):
    forge.others = 150  # two pages of other people's comments before ours
    env = github(tmp_path, forge)
    first = post_comment(body(tmp_path, "FAIL"), environ=env)
    assert (first.action, first.exit_code) == ("created", EXIT_OK)
    assert forge.writes() == [("POST", "/repos/o/r/issues/5/comments")]
    (ours,) = forge.comments
    second = post_comment(body(tmp_path, "PASS"), environ=env)
    assert second.action == "updated" and forge.comments == {ours: f"{MARKER}\nPASS\n"}
    assert forge.writes()[-1] == ("PATCH", f"/repos/o/r/issues/comments/{ours}")
    post = next(r for r in forge.requests if r.method == "POST")
    assert post.headers["authorization"] == "Bearer t0ken" and post.body == {"body": f"{MARKER}\nFAIL\n"}
    pages = [r.query for r in forge.requests if r.method == "GET"]
    assert pages == ["per_page=100&page=1", "per_page=100&page=2"] * 2, "ours was on the second page"


def test_gitlab_notes_with_its_own_token(tmp_path, forge):
    env = {"GITLAB_CI": "true", "CI_API_V4_URL": f"{forge.url}/api/v4", "CI_PROJECT_ID": "group/proj",
           "CI_MERGE_REQUEST_IID": "12", "SHASWEEP_GITLAB_TOKEN": "glpat"}
    assert post_comment(body(tmp_path, "one"), environ=env).action == "created"
    assert post_comment(body(tmp_path, "two"), environ=env).action == "updated"
    (ours,) = forge.comments
    assert forge.writes() == [("POST", "/api/v4/projects/group%2Fproj/merge_requests/12/notes"),
                              ("PUT", f"/api/v4/projects/group%2Fproj/merge_requests/12/notes/{ours}")]
    assert forge.requests[-1].headers["private-token"] == "glpat"


@pytest.mark.parametrize(("case", "why"), [
    ("fork", "the pull request comes from the fork someone/r, whose jobs get a read-only token (docs/ci.md: "
             "post it from a workflow_run job)"),
    ("no token", "no token in GITHUB_TOKEN"),
    ("push", "this job is not for a pull request or merge request"),
])
def test_where_it_cannot_post_it_says_why_and_keeps_the_file(tmp_path, forge, case, why, capsys,
                                                               monkeypatch):
    env = github(tmp_path, forge, fork=case == "fork", token=None if case == "no token" else "t",
                 number=None if case == "push" else 5)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    if case == "no token":
        monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    path = body(tmp_path, "FAIL")
    assert main(["comment", "--body", str(path)]) == EXIT_OK
    line = capsys.readouterr().out.strip()
    assert line == f"comment not posted: {why}; it is in {path}"
    assert forge.requests == [] and path.is_file()


def test_a_refusal_exits_3_naming_it(tmp_path, forge):
    forge.fail_with = 403
    outcome = post_comment(body(tmp_path, "x"), environ=github(tmp_path, forge))
    assert outcome.exit_code == EXIT_RUN_FAILED
    assert "HTTP 403" in outcome.line and "pull-requests: write" in outcome.line


def test_a_redirect_is_not_followed(tmp_path, forge):
    with ForgeServer() as elsewhere:
        forge.redirect_to = f"{elsewhere.url}/steal"
        outcome = post_comment(body(tmp_path, "x"), environ=github(tmp_path, forge))
        assert outcome.exit_code == EXIT_RUN_FAILED and "not followed" in outcome.line
        assert elsewhere.requests == [], "the token never reached another host"
