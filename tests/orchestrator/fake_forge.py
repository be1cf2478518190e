"""A local stand-in for GitHub's issue-comments and GitLab's merge-request-notes REST APIs, on
127.0.0.1: it records every request (method, path, headers, JSON body) and keeps the comments it was
given, so a test sees a comment created, listed and edited in place. ``fail_with`` makes every answer
that HTTP status; ``redirect_to`` answers every request with a redirect there."""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

_GITHUB_LIST = re.compile(r"/repos/[^/]+/[^/]+/issues/(\d+)/comments\Z")
_GITHUB_ONE = re.compile(r"/repos/[^/]+/[^/]+/issues/comments/(\d+)\Z")
_GITLAB_LIST = re.compile(r"/api/v4/projects/[^/]+/merge_requests/(\d+)/notes\Z")
_GITLAB_ONE = re.compile(r"/api/v4/projects/[^/]+/merge_requests/(\d+)/notes/(\d+)\Z")


@dataclass
class Request:
    method: str
    path: str
    query: str
    headers: dict[str, str]  # names in lower case
    body: dict | None


@dataclass
class Forge:
    """The server's state: requests seen, comments kept (id -> body), the behaviour asked for."""

    requests: list[Request] = field(default_factory=list)
    comments: dict[int, str] = field(default_factory=dict)
    others: int = 0  # comments by other people listed before ours (pages of them)
    fail_with: int | None = None
    redirect_to: str | None = None
    url: str = ""

    def writes(self) -> list[tuple[str, str]]:
        """(method, path) of every request that is not a GET."""
        return [(r.method, r.path) for r in self.requests if r.method != "GET"]


def _handler(forge: Forge) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def _answer(self, status: int, payload: object = None, headers: dict[str, str] | None = None) -> None:
            data = b"" if payload is None else json.dumps(payload).encode()
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _handle(self) -> None:
            parts = urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length)) if length else None
            headers = {name.lower(): value for name, value in self.headers.items()}
            forge.requests.append(Request(self.command, parts.path, parts.query, headers, body))
            if forge.redirect_to is not None:
                return self._answer(302, headers={"Location": forge.redirect_to})
            if forge.fail_with is not None:
                return self._answer(forge.fail_with, {"message": "refused"})
            if self.command == "GET" and (_GITHUB_LIST.match(parts.path) or _GITLAB_LIST.match(parts.path)):
                return self._answer(200, self._page(parts.query))
            if self.command == "POST" and (_GITHUB_LIST.match(parts.path) or _GITLAB_LIST.match(parts.path)):
                new = max(forge.comments, default=1000) + 1
                forge.comments[new] = body["body"]
                return self._answer(201, {"id": new, "body": body["body"]})
            one = _GITHUB_ONE.match(parts.path) or _GITLAB_ONE.match(parts.path)
            if self.command in ("PATCH", "PUT") and one and int(one.groups()[-1]) in forge.comments:
                forge.comments[int(one.groups()[-1])] = body["body"]
                return self._answer(200, {"id": int(one.groups()[-1]), "body": body["body"]})
            return self._answer(404, {"message": "Not Found"})

        def _page(self, query: str) -> list[dict]:
            args = dict(item.split("=", 1) for item in query.split("&") if "=" in item)
            page, per_page = int(args.get("page", 1)), int(args.get("per_page", 30))
            listed = [{"id": i, "body": f"comment {i} by someone"} for i in range(1, forge.others + 1)]
            listed += [{"id": key, "body": text} for key, text in sorted(forge.comments.items())]
            return listed[(page - 1) * per_page:page * per_page]

        do_GET = do_POST = do_PATCH = do_PUT = _handle

    return Handler


class ForgeServer:
    """``with ForgeServer() as forge:`` a running server; ``forge.url`` is its base URL."""

    def __init__(self) -> None:
        self.forge = Forge()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self.forge))
        self.forge.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Forge:
        self.thread.start()
        return self.forge

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
