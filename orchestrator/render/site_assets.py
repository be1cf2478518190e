"""The results site's shared files under ``static/``: BokehJS (the core bundle the reports inline, here
one file every page loads: nothing from the network), the style sheet (the reports' style and the
site's additions: one look) and the script of a case page's filters and x axis."""

from __future__ import annotations

import hashlib
from pathlib import Path

import bokeh
from bokeh.resources import Resources

from orchestrator.render.page import STYLE
from orchestrator.render.site_paths import static_file

BOKEH_JS = f"bokeh-{bokeh.__version__}.min.js"
# what makes the pages besides the data: the render package and the site's model of a case
PAGE_MAKERS = (Path(__file__).parent, Path(__file__).parents[1] / "analysis" / "site_model.py")
STYLE_SHEET, SCRIPT = "site.css", "site.js"
SITE_STYLE = """
nav { font-size: 13px; margin-bottom: 0.5em; } nav a { margin-right: 1em; }
td.spark { padding: 0 4px; }
tr.open td:first-child { border-left: 4px solid #d62728; }
.filters { display: flex; flex-wrap: wrap; gap: 1.5em; background: #f7f7f7; padding: 6px 10px;
           border-radius: 6px; position: sticky; top: 0; z-index: 10; }
.filters fieldset { border: none; margin: 0; padding: 0; } .filters legend { font-weight: bold; padding: 0; }
.filters label { margin-right: 0.8em; white-space: nowrap; }
.empty { font-size: 1.2em; padding: 1em; background: #f2f2f2; border-radius: 6px; }
code { font-size: 12px; }
"""
# Runs in the browser: reads the filter checkboxes (data-key: side, host or settings) and sets every
# ``site-filter-<i>`` BooleanFilter from the ``side``, ``host`` and ``settings`` columns of
# ``site-src-<i>``; the x-axis radio shows the commit-order or the time figures.
SITE_SCRIPT = """
function shasweepFilters() {
  const form = document.getElementById('filters');
  if (!form || !window.Bokeh) return;
  const on = {};
  for (const box of form.querySelectorAll('input[type=checkbox]')) {
    (on[box.dataset.key] = on[box.dataset.key] || {})[box.value] = box.checked;
  }
  const count = Number(form.dataset.sources);
  for (const doc of Bokeh.documents) {
    for (let i = 0; i < count; i++) {
      const source = doc.get_model_by_name('site-src-' + i);
      const filter = doc.get_model_by_name('site-filter-' + i);
      if (!source || !filter) continue;
      const data = source.data, rows = (data.side || []).length, keep = new Array(rows);
      for (let j = 0; j < rows; j++) {
        keep[j] = ['side', 'host', 'settings'].every(k => !on[k] || on[k][String(data[k][j])] !== false);
      }
      filter.booleans = keep;
    }
  }
}
function shasweepAxis() {
  const chosen = document.querySelector('input[name=xaxis]:checked');
  const mode = chosen ? chosen.value : 'commit';
  for (const block of document.querySelectorAll('[data-xmode]')) block.hidden = block.dataset.xmode !== mode;
}
document.addEventListener('change', (event) => {
  if (event.target.name === 'xaxis') shasweepAxis(); else if (event.target.dataset.key) shasweepFilters();
});
"""


def site_assets() -> dict[str, str]:
    """Path under the site's root -> content of each shared file."""
    bokeh_js = "\n".join(Resources(mode="inline", components=["bokeh"]).js_raw)
    return {static_file(BOKEH_JS): bokeh_js, static_file(STYLE_SHEET): STYLE + SITE_STYLE,
            static_file(SCRIPT): SITE_SCRIPT}


def renderer_id() -> str:
    """A digest of the code that renders the pages (``PAGE_MAKERS``' sources and Bokeh's version): a
    build by other code renders every page again, since a page kept from the last build may differ."""
    digest = hashlib.sha256(bokeh.__version__.encode())
    for maker in PAGE_MAKERS:
        for source in sorted(maker.glob("*.py")) if maker.is_dir() else [maker]:
            digest.update(source.name.encode() + b"\0" + source.read_bytes())
    return digest.hexdigest()[:16]
