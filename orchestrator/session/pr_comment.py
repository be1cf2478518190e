"""``shasweep comment``: post ``shasweep ci``'s comment on the pull request, or edit the one it
posted before (found by its hidden marker, ``render.ci_comment.MARKER``), so a pull request has one
comment however often it is pushed to.

GitHub: the issue-comments REST API under ``GITHUB_API_URL`` with the job's token (``GITHUB_TOKEN``);
GitLab: the merge-request notes API under ``CI_API_V4_URL`` with a token that may write notes
(``SHASWEEP_GITLAB_TOKEN``: GitLab's job token may not). Where it cannot post, by design (no pull
request, a fork's read-only token, no token), it says why in one line, leaves the comment in its
file and exits 0; an HTTP or network failure exits 3. Requests go only to the API's own URL
(http or https), follow no redirect (a token is never sent elsewhere), and read capped answers.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.errors import EXIT_OK, EXIT_RUN_FAILED, InvalidInputError
from orchestrator.render.ci_comment import MARKER
from orchestrator.session.ci_context import CiContext, ci_context

MAX_BODY_CHARS = 65_536  # GitHub's limit for a comment
MAX_ANSWER_BYTES = 16 << 20
MAX_PAGES = 50
PER_PAGE = 100
TIMEOUT_S = 30.0
TOKEN_ENV = {"github": "GITHUB_TOKEN", "gitlab": "SHASWEEP_GITLAB_TOKEN"}


@dataclass(frozen=True)
class CommentOutcome:
    """What ``post_comment`` did (``created``, ``updated`` or ``not posted``), in one line."""

    action: str
    line: str
    exit_code: int = EXIT_OK


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):  # noqa: ANN001, ANN201 - urllib's API
        raise urllib.error.HTTPError(req.full_url, code, f"redirected to {newurl}: not followed", headers, fp)


def post_comment(body_path: Path, *, token_env: str | None = None,
                 environ: Mapping[str, str] | None = None) -> CommentOutcome:
    """Create or update the comment whose text is in ``body_path``."""
    environ = os.environ if environ is None else environ
    context = ci_context(environ)
    body = _body(body_path)
    name = token_env or TOKEN_ENV.get(context.provider, "GITHUB_TOKEN")
    why = _why_not(context, environ.get(name), name)
    if why is not None:
        return CommentOutcome("not posted", f"comment not posted: {why}; it is in {body_path}")
    api = _comments(context, environ[name])
    try:
        existing = api.find()
        if existing is None:
            api.create(body)
            return CommentOutcome("created", f"comment posted on {api.what}")
        api.update(existing, body)
        return CommentOutcome("updated", f"comment updated on {api.what} (id {existing})")
    except (urllib.error.URLError, OSError, ValueError) as exc:
        return CommentOutcome("not posted", f"comment not posted: {_failure(exc)}; it is in {body_path}",
                              EXIT_RUN_FAILED)


def _body(path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8")[:MAX_BODY_CHARS]
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"cannot read the comment {str(path)!r}: {exc}", "--body") from None
    return text if MARKER in text else f"{MARKER}\n{text}"


def _why_not(context: CiContext, token: str | None, name: str) -> str | None:
    """Why no comment can be posted here, or None."""
    if context.provider == "local":
        return "not in GitHub Actions or GitLab CI"
    if context.change is None:
        return "this job is not for a pull request or merge request"
    if context.fork is not None:
        return (f"the pull request comes from the fork {context.fork}, whose jobs get a read-only token "
                "(docs/ci.md: post it from a workflow_run job)")
    if not token:
        return f"no token in {name}"
    if not context.api_url or urllib.parse.urlsplit(context.api_url).scheme not in ("https", "http"):
        return f"the API URL {context.api_url!r} is not http(s)"
    return None


def _failure(exc: Exception) -> str:
    if isinstance(exc, urllib.error.HTTPError):
        hint = " (the token may not write comments: give the job `pull-requests: write`)" if exc.code in (
            401, 403, 404) else ""
        return f"HTTP {exc.code} {exc.reason} from {exc.url}{hint}"
    return f"{type(exc).__name__}: {exc}"


@dataclass(frozen=True)
class _Comments:
    """Where a forge keeps a pull request's comments: the list (``GET`` paged, ``POST`` creates) and
    one comment (``update`` with ``edit``, ``PATCH`` or ``PUT``), below ``base`` with ``headers``."""

    base: str
    headers: dict[str, str]
    listing: str
    one: str  # with {id}
    edit: str
    what: str  # for messages: o/r#5, merge request !12

    def call(self, method: str, path: str, data: dict[str, Any] | None = None) -> Any:
        headers = {"User-Agent": "shasweep", "Content-Type": "application/json", **self.headers}
        request = urllib.request.Request(self.base.rstrip("/") + path, method=method, headers=headers,
                                         data=None if data is None else json.dumps(data).encode())
        with urllib.request.build_opener(_NoRedirect).open(request, timeout=TIMEOUT_S) as answer:
            raw = answer.read(MAX_ANSWER_BYTES + 1)
        if len(raw) > MAX_ANSWER_BYTES:
            raise ValueError(f"the answer to {method} {path} is over {MAX_ANSWER_BYTES >> 20} MiB")
        return json.loads(raw) if raw.strip() else None

    def find(self) -> int | None:
        """The id of the first comment listed (paged) whose body holds the marker."""
        for page in range(1, MAX_PAGES + 1):
            listed = self.call("GET", f"{self.listing}?per_page={PER_PAGE}&page={page}")
            if not isinstance(listed, list):
                raise ValueError(f"GET {self.listing} did not answer a list")
            for item in listed:
                ours = isinstance(item, dict) and MARKER in str(item.get("body", ""))
                if ours and isinstance(item.get("id"), int):
                    return item["id"]
            if len(listed) < PER_PAGE:
                return None
        return None

    def create(self, body: str) -> None:
        self.call("POST", self.listing, {"body": body})

    def update(self, comment: int, body: str) -> None:
        self.call(self.edit, self.one.format(id=comment), {"body": body})


def _comments(context: CiContext, token: str) -> _Comments:
    """GitHub's issue comments of the pull request, or GitLab's notes of the merge request."""
    if context.provider == "github":
        repo = "/".join(urllib.parse.quote(part, safe="") for part in (context.repository or "").split("/"))
        return _Comments(context.api_url or "", {"Authorization": f"Bearer {token}",
                                                 "Accept": "application/vnd.github+json",
                                                 "X-GitHub-Api-Version": "2022-11-28"},
                         f"/repos/{repo}/issues/{context.change}/comments",
                         f"/repos/{repo}/issues/comments/{{id}}", "PATCH",
                         f"{context.repository}#{context.change}")
    project = urllib.parse.quote(context.repository or "", safe="")
    notes = f"/projects/{project}/merge_requests/{context.change}/notes"
    return _Comments(context.api_url or "", {"PRIVATE-TOKEN": token}, notes, f"{notes}/{{id}}", "PUT",
                     f"merge request !{context.change}")
