"""Where ``shasweep ci`` runs: GitHub Actions, GitLab CI or a plain shell, read from the environment.

GitHub: ``GITHUB_EVENT_PATH`` (the event payload: a pull request's base and head SHAs and number, a
push's ``before`` and ``after``, a merge group's), ``GITHUB_REPOSITORY``, ``GITHUB_API_URL``,
``GITHUB_SERVER_URL`` and ``GITHUB_RUN_ID`` (the run's page, where the report artifact is),
``GITHUB_STEP_SUMMARY`` and ``GITHUB_OUTPUT``. GitLab: the merge-request variables
(``CI_MERGE_REQUEST_DIFF_BASE_SHA``, ``CI_MERGE_REQUEST_IID``, ``CI_PROJECT_ID``, ...),
``CI_API_V4_URL`` and ``CI_JOB_URL``. The payload is read capped and checked: a malformed one is an
input error naming the variable.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from orchestrator.errors import InvalidInputError

MAX_EVENT_BYTES = 64 << 20
_NO_COMMIT = "0" * 40  # a push's ``before`` when the branch is new


@dataclass(frozen=True)
class CiContext:
    """What the CI tells ``shasweep ci`` and ``shasweep comment``; None where it says nothing."""

    provider: str  # github | gitlab | local
    base: str | None = None  # the base commit (a pull request's base, a push's before)
    head: str | None = None
    change: int | None = None  # the pull request's number, the merge request's iid
    repository: str | None = None  # GitHub's owner/name; GitLab's project id
    api_url: str | None = None
    run_url: str | None = None  # the job's page: where its artifacts are
    fork: str | None = None  # the fork a pull request comes from (its jobs get no write token)
    summary_file: Path | None = None  # GITHUB_STEP_SUMMARY
    output_file: Path | None = None  # GITHUB_OUTPUT


def ci_context(environ: Mapping[str, str]) -> CiContext:
    """The context ``environ`` describes."""
    if environ.get("GITHUB_ACTIONS") == "true":
        return _github(environ)
    if environ.get("GITLAB_CI") == "true":
        return _gitlab(environ)
    return CiContext("local")


def _github(environ: Mapping[str, str]) -> CiContext:
    event = _event(environ.get("GITHUB_EVENT_PATH"))
    base = head = fork = None
    change = None
    pull = event.get("pull_request")
    if isinstance(pull, dict):
        base, head = _sha(pull, "base"), _sha(pull, "head")
        change = pull.get("number") if isinstance(pull.get("number"), int) else None
        fork = _fork(pull)
    elif isinstance(event.get("merge_group"), dict):
        base, head = event["merge_group"].get("base_sha"), event["merge_group"].get("head_sha")
    elif isinstance(event.get("after"), str):
        head = event["after"]
        base = event.get("before") if event.get("before") != _NO_COMMIT else None
    server, repository, run = (environ.get(name) for name in
                               ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID"))
    return CiContext(
        "github", base=_text(base), head=_text(head), change=change, repository=repository,
        api_url=environ.get("GITHUB_API_URL", "https://api.github.com"),
        run_url=f"{server}/{repository}/actions/runs/{run}" if server and repository and run else None,
        fork=fork, summary_file=_path(environ.get("GITHUB_STEP_SUMMARY")),
        output_file=_path(environ.get("GITHUB_OUTPUT")))


def _gitlab(environ: Mapping[str, str]) -> CiContext:
    iid = environ.get("CI_MERGE_REQUEST_IID", "")
    source = environ.get("CI_MERGE_REQUEST_SOURCE_PROJECT_ID")
    target = environ.get("CI_MERGE_REQUEST_PROJECT_ID")
    fork = source is not None and target is not None and source != target
    return CiContext(
        "gitlab",
        base=(environ.get("CI_MERGE_REQUEST_DIFF_BASE_SHA")  # the merge base itself
              or environ.get("CI_MERGE_REQUEST_TARGET_BRANCH_SHA")),
        head=environ.get("CI_COMMIT_SHA"), change=int(iid) if iid.isdigit() else None,
        repository=environ.get("CI_PROJECT_ID"), api_url=environ.get("CI_API_V4_URL"),
        run_url=environ.get("CI_JOB_URL"),
        fork=environ.get("CI_MERGE_REQUEST_SOURCE_PROJECT_PATH", "a fork") if fork else None)


def _event(path: str | None) -> dict:
    """The event payload at ``path`` (``{}`` without one)."""
    if not path:
        return {}
    try:
        with open(path, "rb") as file:
            data = file.read(MAX_EVENT_BYTES + 1)
    except OSError as exc:
        raise InvalidInputError(f"cannot read the event payload {path!r}: {exc.strerror}",
                                "GITHUB_EVENT_PATH") from None
    if len(data) > MAX_EVENT_BYTES:
        raise InvalidInputError(f"the event payload {path!r} is over {MAX_EVENT_BYTES >> 20} MiB",
                                "GITHUB_EVENT_PATH")
    try:
        event = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"the event payload {path!r} is not JSON: {exc}",
                                "GITHUB_EVENT_PATH") from None
    if not isinstance(event, dict):
        raise InvalidInputError(f"the event payload {path!r} is not a JSON object", "GITHUB_EVENT_PATH")
    return event


def _sha(pull: dict, side: str) -> str | None:
    ref = pull.get(side)
    return ref.get("sha") if isinstance(ref, dict) else None


def _fork(pull: dict) -> str | None:
    """The head repository's name when it is not the base's (a deleted fork: ``a deleted fork``)."""
    head, base = pull.get("head"), pull.get("base")
    head_repo = head.get("repo") if isinstance(head, dict) else None
    base_repo = base.get("repo") if isinstance(base, dict) else None
    head_name = head_repo.get("full_name") if isinstance(head_repo, dict) else None
    base_name = base_repo.get("full_name") if isinstance(base_repo, dict) else None
    if head_name is None and base_name is not None:
        return "a deleted fork"
    return head_name if head_name != base_name else None


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _path(value: str | None) -> Path | None:
    return Path(value) if value else None
