"""One self-contained HTML page: headings, text, tables and Bokeh figures, with BokehJS inlined.

Every text (headings, paragraphs, items, cells, hovers) is ``printable`` and HTML-escaped (``html_text``).
Nothing on the page loads from the network: BokehJS is inlined (``Resources(mode="inline")``, only the
core ``bokeh`` bundle: the pages use no widgets, tables, WebGL or MathJax) and so is the style sheet.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field

from bokeh.document import Document
from bokeh.embed import components
from bokeh.model import Model
from bokeh.resources import Resources

from orchestrator.printable import printable
from orchestrator.render.tables import Table

# Cell text -> CSS class, so verdicts and statuses stand out wherever a table shows them.
HIGHLIGHTS: dict[str, str] = {
    "PASS": "pass", "FAIL": "fail", "INCONCLUSIVE": "warn", "NO DATA": "fail", "DRIFT": "warn",
    "faster (large)": "pass", "slower (large)": "fail",
    "ok": "pass", "failed": "fail", "timeout": "fail", "cancelled": "fail", "audit_failed": "fail",
}
WAIVED_PREFIX = "FAIL (waived"  # a waived FAIL (``tables.verdict_text``): accepted, not failing
BOKEH_JS = Resources(mode="inline", components=["bokeh"])
STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 1.5em auto; max-width: 1200px; color: #222; }
h1 { font-size: 1.6em; } h2 { margin-top: 1.8em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: 0.6em 0; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f2f2f2; }
td.pass { background: #d7f5d7; color: #145214; font-weight: bold; }
td.fail { background: #fbd5d5; color: #8a1010; font-weight: bold; }
td.waived { background: #e4e4f7; color: #2b2b7a; font-weight: bold; }
td.warn { background: #fdf0c4; color: #6b5200; font-weight: bold; }
.plots { display: flex; flex-wrap: wrap; gap: 12px; }
.scroll { overflow-x: auto; max-width: 100%; }
td.nowrap { white-space: nowrap; }
.banner { font-size: 1.25em; font-weight: bold; padding: 0.6em 1em; border-radius: 6px; margin: 0.5em 0 1em; }
.banner.pass { background: #d7f5d7; color: #145214; } .banner.fail { background: #fbd5d5; color: #8a1010; }
.banner.warn { background: #fdf0c4; color: #6b5200; }
[title] { text-decoration: underline dotted #999; }
.note { color: #555; }
.warning { background: #fdf0c4; color: #6b5200; padding: 6px 10px; font-weight: bold; }
"""


@dataclass
class Page:
    """Blocks of HTML and figures in document order."""

    title: str
    _blocks: list[str | Model] = field(default_factory=list)

    def banner(self, text: str, css_class: str) -> None:
        """A verdict banner (``css_class``: pass, fail or warn)."""
        self._blocks.append(f'<div class="banner {css_class}" id="verdict">{html_text(text)}</div>')

    def heading(self, text: str, level: int = 2) -> None:
        self._blocks.append(f"<h{level}>{html_text(text)}</h{level}>")

    def paragraph(self, text: str, css_class: str = "") -> None:
        attr = f' class="{css_class}"' if css_class else ""
        self._blocks.append(f"<p{attr}>{html_text(text)}</p>")

    def items(self, lines: list[str]) -> None:
        self._blocks.append("<ul>" + "".join(f"<li>{html_text(line)}</li>" for line in lines) + "</ul>")

    def table(self, table: Table) -> None:
        self._blocks.append(table_html(table))

    def figures(self, figures: list[Model]) -> None:
        """Figures side by side (wrapping on narrow screens)."""
        self._blocks.append('<div class="plots">')
        self._blocks.extend(figures)
        self._blocks.append("</div>")

    def render(self) -> str:
        """The complete HTML document."""
        figures = {f"plot{i}": b for i, b in enumerate(self._blocks) if isinstance(b, Model)}
        if figures:  # one document for all, its model graph computed once (once per root: quadratic)
            document = Document()
            with document.models.freeze():
                for figure in figures.values():
                    document.add_root(figure)
        script, divs = components(figures) if figures else ("", {})
        names = iter(divs)
        body = "\n".join(divs[next(names)] if isinstance(b, Model) else b for b in self._blocks)
        return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
                f"<title>{html_text(self.title)}</title>\n{BOKEH_JS.render()}\n<style>{STYLE}</style>\n"
                f"</head>\n<body>\n<h1>{html_text(self.title)}</h1>\n{body}\n{script}\n</body>\n</html>\n")

def table_html(table: Table) -> str:
    """An HTML table (scrolling sideways rather than overflowing the page); cells whose text is a
    verdict or status get its highlight class, cells with a hover text show it on hover."""
    head = "".join(f"<th>{html_text(h)}</th>" for h in table.header)
    rows = "".join("<tr>" + "".join(_cell(c, table.hovers.get((i, j))) for j, c in enumerate(row)) + "</tr>"
                   for i, row in enumerate(table.rows))
    return f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table></div>'


def _cell(text: str, hover: str | None = None) -> str:
    css = "waived" if text.startswith(WAIVED_PREFIX) else HIGHLIGHTS.get(text)
    attrs = (f' class="{css}"' if css else "") + (f' title="{html_text(hover)}"' if hover else "")
    return f"<td{attrs}>{html_text(text)}</td>"


def html_text(text: str) -> str:
    """``text`` ``printable`` and HTML-escaped (quotes included: it may be an attribute's value)."""
    return html.escape(printable(text))
