"""``/shasweep/history``: the results site (``shasweep site``) on the scheduler's board.

The scheduler builds the site of the results root it serves into a directory of its own, by running
the command it is given (``shasweep site --results ROOT --out DIR``) as a child process, so the build's
imports, memory and CPU never touch the scheduler's event loop; it serves the site's files from that
directory. A request for the index brings the site up to date first (at most every
``REFRESH_S``; one build at a time, which every request arriving meanwhile awaits); other pages are
served as the last build left them. A build that fails is named on a page of its own and the last
built pages stay served. Only regular files inside the directory are served, never its state
(``.shasweep-site/``) nor anything a path with ``..`` or a link could reach.
"""

from __future__ import annotations

import asyncio
import html
import os
import stat
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from tornado import web

if TYPE_CHECKING:
    from distributed import Scheduler

ROUTE = "/shasweep/history"
REFRESH_S = 10.0  # an index request within this long of the last build is served as it is
BUILD_TIMEOUT_S = 600.0
INDEX = "index.html"
TYPES: dict[str, str] = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
                         ".css": "text/css; charset=utf-8", ".md": "text/markdown; charset=utf-8"}


class HistorySite:
    """The site's directory and how to bring it up to date; builds one at a time."""

    def __init__(self, directory: Path, build: Sequence[str], refresh_s: float = REFRESH_S) -> None:
        self.directory, self.build, self.refresh_s = directory, list(build), refresh_s
        self.failure: str | None = None  # why the last build failed
        self._built_at: float | None = None
        self._running: asyncio.Task | None = None

    async def refresh(self) -> None:
        """Bring the site up to date unless the last build is recent; await a build already running."""
        if self._running is None:
            if self._built_at is not None and time.monotonic() - self._built_at < self.refresh_s:
                return
            self._running = asyncio.ensure_future(self._build())
        running = self._running
        try:
            await asyncio.shield(running)
        finally:
            if running.done() and self._running is running:
                self._running = None

    async def _build(self) -> None:
        process = await asyncio.create_subprocess_exec(*self.build, stdin=asyncio.subprocess.DEVNULL,
                                                       stdout=asyncio.subprocess.DEVNULL,
                                                       stderr=asyncio.subprocess.PIPE)
        try:
            _, err = await asyncio.wait_for(process.communicate(), BUILD_TIMEOUT_S)
        except TimeoutError:
            process.kill()
            await process.wait()
            err = f"the build took longer than {BUILD_TIMEOUT_S:.0f} s".encode()
        lines = err.decode("utf-8", "replace").strip().splitlines() or [f"exit {process.returncode}"]
        self.failure = None if process.returncode == 0 else lines[-1]
        self._built_at = time.monotonic()

    def file(self, relative: str) -> bytes | None:
        """The content of the site's file at ``relative``; None when there is no such regular file
        inside the site (or the path names its state or leaves it)."""
        parts = [p for p in relative.split("/") if p]
        if not parts or any(p in (".", "..") or p.startswith(".") for p in parts):
            return None
        try:
            fd = os.open(self.directory.joinpath(*parts), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            return None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            return None
        with open(fd, "rb") as handle:
            return handle.read()


class HistoryPages(web.RequestHandler):
    """GET ``/shasweep/history/<path>``: a file of the site (the index brought up to date first)."""

    def initialize(self, site: HistorySite) -> None:
        self.site = site

    async def get(self, path: str | None = None) -> None:
        if not path:  # /shasweep/history: the site's links are relative to the directory
            self.redirect(ROUTE + "/")
            return
        relative = path.lstrip("/") or INDEX
        if relative == INDEX:
            await self.site.refresh()
        content = self.site.file(relative)
        if content is None and relative == INDEX and self.site.failure:
            self.set_status(503)
            self.finish(f"<!DOCTYPE html><title>shasweep results</title><p>The results site could not be "
                        f"built: {html.escape(self.site.failure)}</p>")
            return
        if content is None:
            raise web.HTTPError(404)
        self.set_header("Content-Type", TYPES.get(Path(relative).suffix, "application/octet-stream"))
        self.set_header("Cache-Control", "no-cache")
        self.finish(content)


def serve_history(scheduler: Scheduler, site: HistorySite) -> None:
    """Serve ``site`` at ``ROUTE`` on ``scheduler``'s HTTP server (before any other page's handler)."""
    application = getattr(scheduler, "http_application", None)
    if application is not None:
        application.add_handlers(".*$", [(ROUTE + r"(/.*)?", HistoryPages, {"site": site})])
