"""The HTML report in headless Chromium: every plot renders, and the page requests nothing from the network.

Chromium is driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``: fd 3 in, fd 4
out, NUL-terminated JSON), so no websocket client is needed. Every request the page makes is seen
through ``Network.requestWillBeSent``.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "orchestrator"))
from test_html_report import FIGURES_ONE_PHASE, FIGURES_PER_CASE, FOREST_PLOTS, SWEEP, make_results  # noqa: E402

from orchestrator.analysis.report_model import make_report  # noqa: E402
from orchestrator.session.recorded import SweepRun  # noqa: E402
from orchestrator.session.reports import write_sweep_html  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
LOCAL_SCHEMES = ("file:", "data:", "blob:", "about:")
TIMEOUT_S = 30.0
# Canvases anywhere in the page, shadow roots included (BokehJS renders each plot into one).
COUNT_CANVASES = """(() => {
  const count = (root) => [...root.querySelectorAll('*')].reduce(
      (n, el) => n + (el.tagName === 'CANVAS' ? 1 : 0) + (el.shadowRoot ? count(el.shadowRoot) : 0), 0);
  return count(document);
})()"""

# Where the banner is, and how wide and tall the Sides table came out.
LAYOUT = """(() => {
  const banner = document.getElementById('verdict').getBoundingClientRect();
  const heading = [...document.querySelectorAll('h2')].find(h => h.textContent === 'Sides');
  const table = heading.nextElementSibling.querySelector('table');
  const rows = [...table.querySelectorAll('tbody tr')].map(r => r.getBoundingClientRect().height);
  return {banner: {top: banner.top, text: document.getElementById('verdict').textContent},
          sides_width: table.getBoundingClientRect().width, sides_row_height: Math.max(...rows),
          body_width: document.body.getBoundingClientRect().width,
          page_width: document.documentElement.scrollWidth};
})()"""

pytestmark = pytest.mark.skipif(CHROMIUM is None,
                                reason="chromium is not installed (apt-get install chromium)")


class DevTools:
    """A headless Chromium and its DevTools protocol pipe."""

    def __init__(self, profile: Path) -> None:
        to_browser, from_browser = os.pipe(), os.pipe()
        self.proc = subprocess.Popen(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
             "--remote-debugging-pipe", "about:blank"],
            pass_fds=(3, 4), preexec_fn=lambda: (os.dup2(to_browser[0], 3), os.dup2(from_browser[1], 4)),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_browser[0])
        os.close(from_browser[1])
        self.out, self.inp = to_browser[1], from_browser[0]
        self.buffer, self.last_id, self.events = b"", 0, []

    def call(self, method: str, session: str | None = None, **params: object) -> dict:
        self.last_id += 1
        message = {"id": self.last_id, "method": method, "params": params,
                   **({"sessionId": session} if session else {})}
        os.write(self.out, json.dumps(message).encode() + b"\0")
        while (reply := self._receive()).get("id") != self.last_id:
            self.events.append(reply)
        assert "error" not in reply, f"{method}: {reply['error']}"
        return reply["result"]

    def wait_for(self, method: str) -> dict:
        while not any(e.get("method") == method for e in self.events):
            self.events.append(self._receive())
        return next(e for e in self.events if e.get("method") == method)

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=10)
        os.close(self.out)
        os.close(self.inp)

    def _receive(self) -> dict:
        deadline = time.monotonic() + TIMEOUT_S
        while b"\0" not in self.buffer:
            ready, _, _ = select.select([self.inp], [], [], max(deadline - time.monotonic(), 0))
            chunk = os.read(self.inp, 1 << 16) if ready else b""
            assert chunk, "chromium closed the DevTools pipe or did not answer in time"
            self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)


@pytest.fixture
def browser(tmp_path):
    tools = DevTools(tmp_path / "profile")
    yield tools
    tools.close()


def test_plots_render_and_nothing_is_fetched(tmp_path, browser):
    root = tmp_path / "results"
    make_results(root)
    report = make_report(root, SWEEP)
    page_path = write_sweep_html(SweepRun(SWEEP, root), report)

    target = browser.call("Target.createTarget", url="about:blank")["targetId"]
    session = browser.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
    browser.call("Network.enable", session)
    browser.call("Page.enable", session)
    browser.call("Emulation.setDeviceMetricsOverride", session, width=1280, height=2000, deviceScaleFactor=1,
                 mobile=False)
    browser.call("Page.navigate", session, url=page_path.as_uri())
    browser.wait_for("Page.loadEventFired")

    assert len(report.cases) == 2
    expected = FIGURES_PER_CASE + FIGURES_ONE_PHASE + FOREST_PLOTS  # go2 has phases, g1 one
    deadline, canvases = time.monotonic() + TIMEOUT_S, 0
    while canvases < expected and time.monotonic() < deadline:
        canvases = browser.call("Runtime.evaluate", session, expression=COUNT_CANVASES,
                                returnByValue=True)["result"]["value"]
        time.sleep(0.2)
    assert canvases >= expected, f"{canvases} canvases rendered, {expected} plots expected"
    roots = browser.call("Runtime.evaluate", session, returnByValue=True,
                         expression="Bokeh.documents.flatMap(d => d.roots()).length")["result"]["value"]
    assert roots == expected

    layout = browser.call("Runtime.evaluate", session, returnByValue=True,
                          expression=LAYOUT)["result"]["value"]
    assert layout["banner"]["top"] < 120
    assert layout["banner"]["text"].endswith("— exit 3 (1 run(s) not ok, 2 not run)")
    assert layout["sides_width"] <= layout["body_width"], "the Sides table fits the page"
    assert layout["sides_row_height"] < 60, "no Sides cell wraps into a tall block"
    assert layout["page_width"] <= 1280, "nothing overflows the window sideways"

    shot = browser.call("Page.captureScreenshot", session, format="png", captureBeyondViewport=True)["data"]
    assert len(shot) > 10_000, "a screenshot of a page with plots is not blank"

    urls = [e["params"]["request"]["url"] for e in browser.events
            if e.get("method") == "Network.requestWillBeSent"]
    assert urls and urls[0] == page_path.as_uri()
    assert [u for u in urls if not u.startswith(LOCAL_SCHEMES)] == [], "the page made network requests"
