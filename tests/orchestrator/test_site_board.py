"""``/shasweep/history``: the results site on the scheduler's board, built by a real ``shasweep site``
child process and served from its directory; a real ``shasweep scheduler --results`` serves it."""

from __future__ import annotations

import asyncio
import os
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from site_lab import CASES, write_lab_sweep
from test_entrypoints import serving, shasweep_argv
from tornado import httpclient, web
from tornado.httpserver import HTTPServer
from tornado.netutil import bind_sockets

from orchestrator.dashboard.history_route import ROUTE, HistoryPages, HistorySite
from orchestrator.errors import EXIT_INVALID
from orchestrator.render.site_paths import case_path

pytestmark = pytest.mark.xdist_group("site_board")


def lab(tmp_path: Path) -> Path:
    root = tmp_path / "results"
    for i in range(3):
        write_lab_sweep(root, i)
    return root


def site_command(root: Path, out: Path) -> list[str]:
    return shasweep_argv("site", "--results", str(root), "--out", str(out))


async def fetch_all(site: HistorySite, paths: list[str]) -> list[tuple[int, str, str]]:
    """(status, content type, body) of each path, asked for at once from a real HTTP server."""
    sockets = bind_sockets(0, "127.0.0.1")
    server = HTTPServer(web.Application([(ROUTE + r"(/.*)?", HistoryPages, {"site": site})]))
    server.add_sockets(sockets)
    port = sockets[0].getsockname()[1]
    client = httpclient.AsyncHTTPClient()
    try:
        replies = await asyncio.gather(*(client.fetch(f"http://127.0.0.1:{port}{path}", raise_error=False,
                                                      follow_redirects=False, request_timeout=300)
                                         for path in paths))
    finally:
        server.stop()
    return [(r.code, r.headers.get("Content-Type", ""), r.body.decode("utf-8", "replace")) for r in replies]


def test_the_board_builds_the_site_once_for_concurrent_requests_and_serves_its_pages(tmp_path):
    root, out = lab(tmp_path), tmp_path / "board-site"
    counter = tmp_path / "builds"
    count = f"open({str(counter)!r}, 'a').write('x')"
    then_build = "import subprocess, sys; sys.exit(subprocess.call(sys.argv[1:]))"
    command = [sys.executable, "-c", f"{count}; {then_build}", *site_command(root, out)]
    site = HistorySite(out, command)
    index, again, bare = asyncio.run(fetch_all(site, [ROUTE + "/", ROUTE + "/index.html", ROUTE]))
    assert counter.read_text() == "x", "one build for the requests that arrived together"
    assert index[0] == 200 and index[1].startswith("text/html") and case_path(CASES[0]) in index[2]
    assert again[0] == 200 and bare[0] == 302
    (case,) = asyncio.run(fetch_all(site, [f"{ROUTE}/{case_path(CASES[0])}"]))
    assert case[0] == 200 and "site-src-0" in case[2] and counter.read_text() == "x"
    statics = asyncio.run(fetch_all(site, [f"{ROUTE}/static/site.js", f"{ROUTE}/static/site.css"]))
    assert [r[1].split(";")[0] for r in statics] == ["text/javascript", "text/css"]


def test_only_the_sites_own_files_are_served(tmp_path):
    out = tmp_path / "site"
    (out / ".shasweep-site").mkdir(parents=True)
    (out / ".shasweep-site" / "state.json").write_text("{}")
    (out / "index.html").write_text("<p>index</p>")
    (tmp_path / "secret.txt").write_text("secret")
    (out / "cases").mkdir()
    os.symlink(tmp_path / "secret.txt", out / "cases" / "link.html")
    os.mkfifo(out / "cases" / "fifo.html")
    site = HistorySite(out, [sys.executable, "-c", "pass"])
    replies = asyncio.run(fetch_all(site, [
        f"{ROUTE}/.shasweep-site/state.json", f"{ROUTE}/%2e%2e/secret.txt", f"{ROUTE}/cases/link.html",
        f"{ROUTE}/cases/fifo.html", f"{ROUTE}/cases/", f"{ROUTE}/nothing.html"]))
    assert [code for code, _, _ in replies] == [404] * 6
    assert all("secret" not in body for _, _, body in replies)


def test_a_build_that_fails_is_named_and_the_last_pages_stay(tmp_path):
    out = tmp_path / "site"
    say = "print('shasweep: error: <no> root', file=sys.stderr)"
    failing = [sys.executable, "-c", f"import sys; {say}; sys.exit(2)"]
    ((code, _, body),) = asyncio.run(fetch_all(HistorySite(out, failing), [ROUTE + "/"]))
    assert code == 503 and "could not be built: shasweep: error: &lt;no&gt; root" in body
    out.mkdir()
    (out / "index.html").write_text("<p>the last build</p>")
    ((code, _, body),) = asyncio.run(fetch_all(HistorySite(out, failing), [ROUTE + "/"]))
    assert code == 200 and "the last build" in body


def test_the_scheduler_serves_the_site_of_its_results_root(tmp_path):
    root = lab(tmp_path)
    home = tmp_path / "home"
    argv = shasweep_argv("scheduler", "--port", "0", "--dashboard-address", "127.0.0.1:0",
                         "--results", str(root))
    with serving(argv, tmp_path / "scheduler.log", env={"SHASWEEP_HOME": str(home)}) as scheduler:
        assert scheduler.board_url is not None
        with urllib.request.urlopen(scheduler.board_url + "/history/", timeout=300) as reply:
            index = reply.read().decode()
        case = f"{scheduler.board_url}/history/{case_path(CASES[1])}"
        with urllib.request.urlopen(case, timeout=60) as reply:
            assert CASES[1] in reply.read().decode()
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(scheduler.board_url + "/history/.shasweep-site/state.json", timeout=60)
    assert all(case_path(case) in index for case in CASES)
    assert list((home / "site").glob("*/index.html")), "built under $SHASWEEP_HOME/site, outside the root"


def test_scheduler_results_must_be_a_results_root_outside_its_site(tmp_path, capsys):
    from orchestrator.cli.main import main

    assert main(["scheduler", "--results", str(tmp_path / "nowhere")]) == EXIT_INVALID
    assert "no results root" in capsys.readouterr().err
