"""The /shasweep page rendered by a real headless Chromium after a real sweep of the fake bench."""

from __future__ import annotations

import asyncio
import base64
import io
import itertools
import json
import logging
import os
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from distributed import LocalCluster
from tornado.websocket import websocket_connect

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "orchestrator"))
from fakebench.fakerepo import make_fake_repo, make_run  # noqa: E402

from orchestrator.dispatch.cluster import DASHBOARD_PRELOAD  # noqa: E402
from orchestrator.dispatch.dispatcher import dispatch_runs  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
SCREENSHOT_ENV = "SHASWEEP_SCREENSHOT"  # set to a path to keep the screenshot
RENDER_TIMEOUT_S = 60.0
# true once Bokeh has built the views of the document it fetched over the websocket
RENDERED = "window.Bokeh !== undefined && Bokeh.index !== undefined && Object.keys(Bokeh.index).length > 0"


def screenshot(url: str, profile: Path, painted) -> bytes:
    """Headless, offline Chromium loads ``url``; once Bokeh rendered the page, a PNG of the window
    for which ``painted(png)`` holds (retried: canvases paint late on a loaded machine).

    The page draws only after its websocket delivered the document, later than the load event a
    plain ``--screenshot`` waits for, so Chromium is driven over the DevTools protocol instead.
    """
    argv = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--no-first-run", f"--user-data-dir={profile}", "--hide-scrollbars", "--window-size=1400,1000",
            "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0", "about:blank"]
    browser = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        capture = _capture(url, profile / "DevToolsActivePort", painted)
        return asyncio.run(asyncio.wait_for(capture, RENDER_TIMEOUT_S))
    finally:
        browser.kill()
        browser.wait()


async def _capture(url: str, port_file: Path, painted) -> bytes:
    while not (port_file.is_file() and port_file.read_text().strip()):
        await asyncio.sleep(0.1)
    port = port_file.read_text().split()[0]
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as response:
        targets = json.loads(response.read())
    page = next(t["webSocketDebuggerUrl"] for t in targets if t["type"] == "page")
    devtools = await websocket_connect(page, max_message_size=64 << 20)
    ids = itertools.count(1)

    async def call(method: str, **params: object) -> dict:
        call_id = next(ids)
        await devtools.write_message(json.dumps({"id": call_id, "method": method, "params": params}))
        while True:
            reply = json.loads(await devtools.read_message())
            if reply.get("id") == call_id:
                assert "error" not in reply, reply
                return reply["result"]

    await call("Page.navigate", url=url)
    while not (await call("Runtime.evaluate", expression=RENDERED, returnByValue=True))["result"]["value"]:
        await asyncio.sleep(0.2)
    while True:  # bounded by RENDER_TIMEOUT_S
        await asyncio.sleep(0.5)  # let the canvases paint
        png = base64.b64decode((await call("Page.captureScreenshot", format="png"))["data"])
        if painted(png):
            devtools.close()
            return png


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Debian: apt-get install chromium)")
def test_the_board_renders_in_a_browser(tmp_path, monkeypatch):
    from PIL import Image

    monkeypatch.setenv("SHASWEEP_HOME", str(tmp_path / "home"))
    repo = make_fake_repo(tmp_path)
    params = {"num_envs": 8, "warmup": 2, "measure": 30, "threads": 1}
    runs = [make_run(repo, repo.shas[i % 2], order=i, results_root=tmp_path / "results", params=params,
                     extra_args=("--step-ms", "10")) for i in range(4)]
    cluster = LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tcp://",
                           host="127.0.0.1", dashboard_address="127.0.0.1:0", resources={"GPU": 1},
                           scheduler_kwargs={"preload": [DASHBOARD_PRELOAD]}, silence_logs=logging.ERROR)
    with cluster:
        outcome = dispatch_runs(runs, scheduler=cluster.scheduler_address, continue_on_error=False,
                            show_progress=False)
        png = tmp_path / "board.png"
        png.write_bytes(screenshot(outcome.dashboard_url, tmp_path / "chromium-profile", side_markers_drawn))
    if os.environ.get(SCREENSHOT_ENV):
        shutil.copy(png, os.environ[SCREENSHOT_ENV])
    image = Image.open(png).convert("RGB")
    assert image.width == 1400
    colors = image.resize((140, 100)).getcolors(maxcolors=140 * 100)
    assert colors is not None and len(colors) > 20, "the page drew tables and charts, not a blank window"


def side_markers_drawn(png: bytes) -> bool:
    """Each side's throughput marker (Category10 blue, orange) was drawn in the throughput chart."""
    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("RGB")
    pixels = {color for _, color in image.getcolors(maxcolors=image.width * image.height)}
    return (31, 119, 180) in pixels and (255, 127, 14) in pixels
