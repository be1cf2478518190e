"""The results site in headless Chromium (driven as ``test_report_browser`` does, over the DevTools
pipe): the index and a case page load without console errors and fetch nothing from the network, the
sparklines and the main plots draw (non-blank canvases), a click on a change point's marker opens its
sweep's page, the filters change what is drawn, and the time axis draws when chosen."""

from __future__ import annotations

import sys
import time
from contextlib import closing
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "orchestrator"))
from site_lab import CASES, sweep_id_of, write_lab_sweep  # noqa: E402
from test_report_browser import CHROMIUM, LOCAL_SCHEMES, TIMEOUT_S, DevTools  # noqa: E402

from orchestrator.render.site_paths import INDEX, case_path, sweep_path  # noqa: E402
from orchestrator.session.site import build_site  # noqa: E402

pytestmark = pytest.mark.skipif(CHROMIUM is None,
                                reason="chromium is not installed (apt-get install chromium)")
SHIFT_AT = 6
# Drawn pixels (neither transparent nor the white background) of the primary canvas of the figure
# named NAME, or -1 while Bokeh has not laid it out.
PIXELS = """((name) => {
  const model = Bokeh.documents[0].get_model_by_name(name);
  const view = model && Bokeh.index.get_by_id(model.id);
  if (!view) return -1;
  const canvas = view.canvas_view.primary.canvas;
  if (canvas.width < 400) return -1;
  const data = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
  let drawn = 0;
  for (let i = 0; i < data.length; i += 4) {
    if (data[i + 3] > 0 && !(data[i] > 245 && data[i + 1] > 245 && data[i + 2] > 245)) drawn++;
  }
  return drawn;
})"""
# Every Bokeh root of the page with its drawn pixels (the index's sparklines are small: any size).
SPARKLINES = """Bokeh.documents[0].roots().map(root => {
  const canvas = Bokeh.index.get_by_id(root.id).canvas_view.primary.canvas;
  const data = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
  let drawn = 0;
  for (let i = 0; i < data.length; i += 4) if (data[i + 3] > 0) drawn++;
  return drawn;
})"""
# Where, in the window, the first change point's marker of the commit-order plot is, and its link.
MARKER = """(() => {
  const doc = Bokeh.documents[0];
  const view = Bokeh.index.get_by_id(doc.get_model_by_name('series-commit').id);
  const data = doc.get_model_by_name('changepoints-commit').data_source.data;
  const box = view.el.getBoundingClientRect();
  return {x: box.left + view.frame.x_scale.compute(data.x_commit[0]),
          y: box.top + view.frame.y_scale.compute(data.y[0]), url: data.url[0]};
})()"""


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site of ten sweeps in which the cand side of the first case gets 10 % slower at sweep 6,
    on two hosts."""
    root = tmp_path_factory.mktemp("lab") / "results"
    for i in range(10):
        write_lab_sweep(root, i, levels={(CASES[0], "cand"): 0.9 if i >= SHIFT_AT else 1.0},
                        host="bench-a" if i % 2 else "bench-b")
    return build_site(root, root.parent / "site").out


@pytest.fixture
def chromium(tmp_path):
    with closing(DevTools(tmp_path / "profile")) as tools:
        yield tools


class Tab:
    """One page of the browser, with the errors it logged."""

    def __init__(self, browser: DevTools, url: str) -> None:
        self.browser = browser
        target = browser.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = browser.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Network", "Page", "Runtime", "Log"):
            browser.call(f"{domain}.enable", self.session)
        browser.call("Emulation.setDeviceMetricsOverride", self.session, width=1300, height=1500,
                     deviceScaleFactor=1, mobile=False)
        browser.call("Page.navigate", self.session, url=url)
        browser.wait_for("Page.loadEventFired")

    def evaluate(self, expression: str) -> object:
        reply = self.browser.call("Runtime.evaluate", self.session, expression=expression, returnByValue=True,
                                  awaitPromise=True)
        assert "exceptionDetails" not in reply, reply
        return reply["result"].get("value")

    def until(self, expression: str, holds, timeout_s: float = TIMEOUT_S) -> object:
        """``expression``'s value once ``holds`` it (Bokeh draws after the load event)."""
        deadline = time.monotonic() + timeout_s
        while not holds(value := self.evaluate(expression)) and time.monotonic() < deadline:
            time.sleep(0.2)
        return value

    def click(self, x: float, y: float) -> None:
        """The pointer moves there, then presses and releases (a tap, as Bokeh's tools see one)."""
        self.browser.call("Input.dispatchMouseEvent", self.session, type="mouseMoved", x=x, y=y)
        time.sleep(0.3)
        for kind in ("mousePressed", "mouseReleased"):
            self.browser.call("Input.dispatchMouseEvent", self.session, type=kind, x=x, y=y, button="left",
                              clickCount=1)

    def errors(self) -> list[str]:
        found = []
        for event in self.browser.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.exceptionThrown":
                found.append(str(params["exceptionDetails"]))
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                found.append(str(params.get("args")))
            elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
                found.append(params["entry"].get("text", ""))
        return found

    def requests(self) -> list[str]:
        return [e["params"]["request"]["url"] for e in self.browser.events
                if e.get("method") == "Network.requestWillBeSent"]


def test_the_index_draws_a_sparkline_per_row_without_errors(site, chromium):
    tab = Tab(chromium, (site / INDEX).as_uri())
    drawn = tab.until(SPARKLINES, lambda v: isinstance(v, list) and len(v) == len(CASES) and min(v) > 0)
    assert len(drawn) == len(CASES) and min(drawn) > 0, f"sparklines drawn: {drawn}"
    assert tab.evaluate("document.querySelectorAll('tr.open').length") == 1
    assert tab.errors() == []
    assert [u for u in tab.requests() if not u.startswith(LOCAL_SCHEMES)] == []


def test_a_case_page_draws_filters_switches_axis_and_links_its_change_point(site, chromium):
    tab = Tab(chromium, (site / case_path(CASES[0])).as_uri())
    for name in ("series-commit", "gates-commit"):
        assert tab.until(f"{PIXELS}('{name}')", lambda v: v > 1000) > 1000, f"{name} is drawn"
    # the filters: without side cand, fewer points are kept and fewer pixels drawn
    kept = "Bokeh.documents[0].get_model_by_name('site-filter-0').booleans.filter(x => x).length"
    points, pixels = tab.evaluate(kept), tab.evaluate(f"{PIXELS}('series-commit')")
    tab.evaluate("document.querySelector('input[data-key=side][value=cand]').click()")
    assert tab.until(kept, lambda v: v < points) == points // 2
    assert tab.until(f"{PIXELS}('series-commit')", lambda v: v != pixels) < pixels
    tab.evaluate("document.querySelector('input[data-key=host][value=bench-a]').click()")
    assert tab.until(kept, lambda v: v < points // 2) < points // 2
    # the time axis is drawn once chosen
    tab.evaluate("document.querySelector('input[name=xaxis][value=time]').click()")
    assert tab.until(f"{PIXELS}('series-time')", lambda v: v > 1000) > 1000
    tab.evaluate("document.querySelector('input[name=xaxis][value=commit]').click()")
    assert tab.errors() == []
    assert [u for u in tab.requests() if not u.startswith(LOCAL_SCHEMES)] == []
    # a click on the change point's marker opens the page of the sweep where the level changed
    marker = tab.until(MARKER, lambda v: isinstance(v, dict))
    expected = (site / sweep_path(sweep_id_of(SHIFT_AT))).as_uri()
    assert Path(site / "cases" / marker["url"]).resolve().as_uri() == expected
    here = (site / case_path(CASES[0])).as_uri()
    for _ in range(5):  # a tap Bokeh missed while it was still laying the page out is tried again
        marker = tab.evaluate(MARKER)
        tab.click(marker["x"], marker["y"])
        if tab.until("location.href", lambda v: v != here, timeout_s=3.0) != here:
            break
    assert tab.evaluate("location.href") == expected
    assert tab.until("document.title", lambda v: v.startswith("sweep ")) == f"sweep {sweep_id_of(SHIFT_AT)}"
