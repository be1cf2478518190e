"""The results site's pages as HTML text: the index (every case x metric, open regressions first),
all sweeps, one page per case and one per sweep, and the page of an empty results root.

Every value shown is ``printable`` and HTML-escaped (``render.page.html_text``; links are relative
paths from ``site_paths``, quoted), so a case, sweep, side or host name holding HTML, Markdown or
control characters is shown as the characters it is. Pages
load BokehJS, the style and the filters' script from ``static/`` (``site_assets``): nothing from the
network.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from bokeh.embed import components
from bokeh.model import Model

from orchestrator.analysis.site_model import CaseView, IndexRow, MetricHistory, ShiftSummary, SiteIndex
from orchestrator.analysis.site_runs import ONE_SIDED
from orchestrator.analysis.site_sweeps import BisectInfo, SweepInfo
from orchestrator.analysis.verdicts import bounds
from orchestrator.render.page import HIGHLIGHTS, html_text
from orchestrator.render.plots import side_colors
from orchestrator.render.site_assets import BOKEH_JS, SCRIPT, STYLE_SHEET
from orchestrator.render.site_paths import (
    INDEX,
    SWEEPS,
    case_path,
    href,
    report_copy,
    static_file,
    sweep_path,
)
from orchestrator.render.site_plots import FilteredSources, metric_figures, shift_text, sparkline

Block = str | Model


def _e(text: object) -> str:
    return html_text(str(text))


def _link(text: object, page: str, depth: int) -> str:
    return f'<a href="{_e(href(page, depth))}">{_e(text)}</a>'


def _cell(content: str, css: str | None = None) -> str:
    return f'<td class="{css}">{content}</td>' if css else f"<td>{content}</td>"


def _table(header: Sequence[str], rows: Sequence[str]) -> str:
    """A table of ``rows`` (each a ``<tr>`` of escaped cells) under an escaped ``header``."""
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = "".join(rows)
    return f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def site_document(title: str, depth: int, blocks: Sequence[Block]) -> str:
    """A complete page: ``blocks`` (HTML text, already escaped, or Bokeh figures) under a title and the
    site's navigation; ``depth``: how many directories below the site's root the page lives."""
    figures = {f"plot{i}": b for i, b in enumerate(blocks) if isinstance(b, Model)}
    script, divs = components(figures) if figures else ("", {})
    names = iter(divs)
    body = "\n".join(divs[next(names)] if isinstance(b, Model) else b for b in blocks)
    up = "../" * depth
    bokeh = f'<script src="{up}{static_file(BOKEH_JS)}"></script>\n' if figures else ""
    nav = f'<nav>{_link("every case", INDEX, depth)} {_link("every sweep", SWEEPS, depth)}</nav>'
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>{_e(title)}</title>\n'
            f'{bokeh}<link rel="stylesheet" href="{up}{static_file(STYLE_SHEET)}">\n</head>\n<body>\n{nav}\n'
            f"<h1>{_e(title)}</h1>\n{body}\n{script}\n"
            f'<script src="{up}{static_file(SCRIPT)}"></script>\n</body>\n</html>\n')


def empty_site_page(root: str) -> str:
    """The index of a results root with no runs."""
    return site_document("shasweep results", 0, [
        f'<p class="empty" id="empty">No runs are recorded under {_e(root)} yet: run a sweep '
        "(<code>shasweep run SWEEP.yaml</code>) and build the site again.</p>"])


def index_page(index: SiteIndex, root: str) -> str:
    """Every case x metric with its sparkline, latest change point and latest gates, open regressions
    first; the damaged files named; the bisects."""
    blocks: list[Block] = [f"<p>{_e(_summary(index, root))}</p>"]
    if index.damaged:
        blocks.append('<div class="warning" id="damaged">Damaged results, skipped (the rest is built): '
                      + "; ".join(_e(line) for line in index.damaged) + "</div>")
    header = ["case", "metric", "recent sweeps (newest at right)",
              "latest change point", "commits", "at sweep", "latest sweep's gates", ""]
    rows, figures = [], []
    for row in index.rows:
        marker = f"spark{len(figures)}"
        figures.append(sparkline(row.recent, row.sides))
        rows.append(_index_row(row, marker))
    table = _table(header, rows)
    blocks += _with_figures(table, figures)
    if index.bisects:
        blocks += ["<h2>Bisects</h2>", _bisect_table(index.bisects, 0)]
    return site_document("shasweep results", 0, blocks)


def _summary(index: SiteIndex, root: str) -> str:
    opened = sum(r.open_regression for r in index.rows)
    return (f"{len({r.case for r in index.rows})} cases, {len(index.rows)} case x metric rows "
            f"({opened} open regressions), {len(index.sweeps)} sweeps, {index.runs} measured runs; "
            f"results root {root}")


def _with_figures(table: str, figures: list[Model]) -> list[Block]:
    """``table`` split at each ``<!--sparkN-->`` marker, the N-th figure in its place."""
    blocks: list[Block] = []
    rest = table
    for i, fig in enumerate(figures):
        before, _, rest = rest.partition(f"<!--spark{i}-->")
        blocks += [before, fig]
    return [*blocks, rest]


def _index_row(row: IndexRow, marker: str) -> str:
    shift = row.shift
    cells = [_cell(_link(row.case, case_path(row.case), 0)), _cell(_e(row.metric)),
             _cell(f"<!--{marker}-->", "spark")]
    if shift is None:
        cells += [_cell("none"), _cell(""), _cell("")]
    else:
        cells += [_cell(_e(_shift_words(shift)), "pass" if shift.better else "fail"),
                  _cell(f"<code>{_e(_commits(shift))}</code>"),
                  _cell(_link(shift.sweep_id, sweep_path(shift.sweep_id), 0))]
    cells.append(_cell(_gates_cell(row.latest_gates, row.latest_sweep, 0)))
    flag = "open regression" if row.open_regression else ("waived" if shift and shift.waived else "")
    cells.append(_cell(_e(flag), "fail" if row.open_regression else None))
    css = ' class="open"' if row.open_regression else ""
    return f"<tr{css}>{''.join(cells)}</tr>"


def _shift_words(shift: ShiftSummary) -> str:
    return shift_text(shift) + (", waived" if shift.waived else "")


def _commits(shift: ShiftSummary) -> str:
    return f"{(shift.sha_before or '-')[:12]} .. {(shift.sha_after or '-')[:12]}"


def _gates_cell(gates: list[Mapping], sweep_id: str | None, depth: int) -> str:
    """``FAIL 0.912 [0.880, 0.944] (cand)`` per gate row (``added on cand`` for a case one side had
    alone), with the sweep's link; empty without."""
    if sweep_id is None:
        return ""
    figures = [_e(f"{r['verdict']} on {r['side']}" if r["verdict"] in ONE_SIDED
                  else f"{_verdict(r)} {_interval(r)} ({r['side']})") for r in gates]
    return _link(sweep_id, sweep_path(sweep_id), depth) + (": " + "; ".join(figures) if figures else "")


def _verdict(row: Mapping) -> str:
    return f"{row['verdict']} (waived)" if row["waived"] else str(row["verdict"])


def _interval(row: Mapping) -> str:
    ratio, low, high = (math.nan if row[k] is None else float(row[k]) for k in ("ratio", "low", "high"))
    if math.isnan(low) or math.isnan(high):
        return f"{ratio:.3f}" if not math.isnan(ratio) else "-"
    return f"{ratio:.3f} {bounds(low, high)}"


def _bisect_table(bisects: Sequence[BisectInfo], depth: int) -> str:
    rows = ["<tr>" + "".join([
        _cell(_e(b.bisect_id)), _cell(_link(b.case, case_path(b.case), depth) if b.case else "-"),
        _cell(_e(b.status)), _cell(f"<code>{_e((b.first_bad or '-')[:12])}</code>"),
        _cell(f"<code>{_e((b.good or '-')[:12])} .. {_e((b.bad or '-')[:12])}</code>"),
        _cell(_link("report", report_copy(f"bisect-{b.bisect_id}", ".html"), depth)),
        _cell(", ".join(_link(s, sweep_path(s), depth) for s in b.steps))]) + "</tr>" for b in bisects]
    return _table(["bisect", "case", "status", "first bad", "good .. bad", "page", "step sweeps"], rows)


def sweeps_page(order: Sequence[str], sweeps: Mapping[str, SweepInfo]) -> str:
    """Every sweep, newest first: when, status, sides and their SHAs."""
    rows = []
    for sweep_id in order:
        info = sweeps.get(sweep_id) or SweepInfo(sweep_id)
        sides = ", ".join(f"{side} {sha[:12]}" for side, sha in info.shas.items())
        rows.append("<tr>" + _cell(_link(sweep_id, sweep_path(sweep_id), 0)) + _cell(_e(info.created or "-"))
                    + _cell(_e(info.status or "-")) + _cell(f"<code>{_e(sides)}</code>") + "</tr>")
    return site_document("every sweep", 0, [_table(["sweep", "created", "status", "sides"], rows)])


def case_site_page(view: CaseView, sweeps: Mapping[str, SweepInfo], gates: Mapping[str, list[dict]]) -> str:
    """One case: filters, its params/command labels, bisects, per metric the change points and the
    series across commits (or time) with the gates' bands, and every sweep of it (``gates``: sweep id
    -> its gate rows on the case, ``site_runs.GATE_COLUMNS``)."""
    urls = {s: href(sweep_path(s), 1) for s in view.sweeps}
    sources = FilteredSources()
    blocks: list[Block] = [f"<p>{_e(_case_summary(view))}</p>", "<!--filters-->"]
    blocks.append(_items(f"{label}: {text}" for label, text in view.settings.items()))
    if view.bisects:
        blocks += ["<h2>Bisects of this case</h2>", _bisect_table(view.bisects, 1)]
    for history in view.metrics:
        blocks += _metric_blocks(history, view, urls, sources)
    blocks += ["<h2>Sweeps</h2>", _case_sweeps_table(view, sweeps, gates)]
    filters = _filters_form(view, sources.count)
    return site_document(f"case {view.case}", 1, [filters if b == "<!--filters-->" else b for b in blocks])


def _case_summary(view: CaseView) -> str:
    runs = sum(m.runs for m in view.metrics[:1])
    return (f"{len(view.sweeps)} sweeps, {len(view.commits)} commits, {runs} ok runs; metrics: "
            f"{', '.join(m.metric for m in view.metrics) or 'none with values'}")


def _metric_blocks(history: MetricHistory, view: CaseView, urls: dict[str, str], sources: FilteredSources
                   ) -> list[Block]:
    blocks: list[Block] = [f'<h2 id="{_e("metric-" + history.metric)}">{_e(history.metric)}</h2>']
    lines = [f"{_e(_shift_words(s))} at sweep {_link(s.sweep_id, sweep_path(s.sweep_id), 1)}, "
             f"commits <code>{_e(_commits(s))}</code>" for s in history.shifts]
    none = "<li>no change point: no side's per-sweep median moved to a new level</li>"
    items = "".join(f"<li>change point: {line}</li>" for line in lines)
    blocks.append(f"<ul>{items or none}</ul>")
    views = metric_figures(history, view.sides, view.commits, urls, sources)
    for axis, figures in views.items():
        blocks.append(f'<div data-xmode="{axis}"{" hidden" if axis != "commit" else ""}>')
        blocks += figures
        blocks.append("</div>")
    return blocks


def _filters_form(view: CaseView, sources: int) -> str:
    hosts = sorted({h for m in view.metrics for h in m.points["host"].astype(str)})
    groups = [("side", view.sides), ("host", hosts), ("settings", list(view.settings))]
    colors = side_colors(view.sides)
    fields = []
    for key, values in groups:
        boxes = "".join(_checkbox(key, v, colors.get(v) if key == "side" else None) for v in values)
        legend = "params/command" if key == "settings" else key
        fields.append(f"<fieldset><legend>{_e(legend)}</legend>{boxes}</fieldset>")
    axis = ('<fieldset><legend>x axis</legend>'
            '<label><input type="radio" name="xaxis" value="commit" checked> commit order</label>'
            '<label><input type="radio" name="xaxis" value="time"> time</label></fieldset>')
    return f'<form class="filters" id="filters" data-sources="{sources}">{"".join(fields)}{axis}</form>'


def _checkbox(key: str, value: str, color: str | None) -> str:
    dot = f'<span style="color:{color}">&#9679;</span> ' if color else ""
    box = f'<input type="checkbox" data-key="{_e(key)}" value="{_e(value)}" checked>'
    return f"<label>{box} {dot}{_e(value)}</label>"


def _items(lines: object) -> str:
    return "<ul>" + "".join(f"<li>{_e(line)}</li>" for line in lines) + "</ul>"


def _case_sweeps_table(view: CaseView, sweeps: Mapping[str, SweepInfo], gates: Mapping[str, list[dict]]
                       ) -> str:
    """Every sweep of the case, newest first: when, its sides' SHAs, its gates on the case, waivers of
    the case, and whether one side alone had the case."""
    one_sided = {}
    for sweep_id, side, word in view.one_sided:
        one_sided.setdefault(sweep_id, []).append(f"{word} on {side}")
    rows = []
    for sweep_id in reversed(view.sweeps):
        info = sweeps.get(sweep_id) or SweepInfo(sweep_id)
        mine = [r for r in gates.get(sweep_id, []) if r["gate"] >= 0]
        figures = "; ".join(_e(f"{r['metric']} {r['side']}: {_verdict(r)} {_interval(r)}") for r in mine)
        waivers = "; ".join(_e(f"{w.reason} ({w.by})") for w in info.active_waivers if w.case == view.case)
        sides = ", ".join(f"{side} {sha[:12]}" for side, sha in info.shas.items())
        rows.append("<tr>" + "".join([
            _cell(_link(sweep_id, sweep_path(sweep_id), 1)), _cell(_e(info.created or "-")),
            _cell(f"<code>{_e(sides)}</code>"), _cell(figures or "-", _css(mine)), _cell(waivers or "-"),
            _cell(_e(", ".join(one_sided.get(sweep_id, [])) or "-"))]) + "</tr>")
    return _table(["sweep", "created", "sides", "gates on this case", "waived", "one side only"], rows)


def _css(gates: list[dict]) -> str | None:
    """The highlight of the most severe verdict among ``gates`` (a waived FAIL: waived)."""
    if not gates:
        return None
    verdicts = {r["verdict"] for r in gates if not r["waived"]}
    for verdict in ("FAIL", "NO DATA", "INCONCLUSIVE", "PASS"):
        if verdict in verdicts:
            return HIGHLIGHTS[verdict]
    return "waived"


def sweep_site_page(info: SweepInfo, gates: list[dict], cases: Sequence[str], reports: Sequence[str],
                    bisect: BisectInfo | None) -> str:
    """One sweep: when, status, sides, its report files, its bisect, the gates' decided intervals (its
    gate rows, ``site_runs.GATE_COLUMNS``), added and removed cases, the waiver log and its cases."""
    facts = f"created {info.created or '-'}, status {info.status or '-'}, baseline {info.baseline or '-'}"
    blocks: list[Block] = [f"<p>{_e(facts)}</p>"]
    links = [_link(name.rsplit(".", 1)[-1] + " report", name, 1) for name in reports]
    if bisect is not None:
        page = report_copy(f"bisect-{bisect.bisect_id}", ".html")
        links.append("step of bisect " + _link(bisect.bisect_id, page, 1))
    if links:
        blocks.append("<p>" + " · ".join(links) + "</p>")
    blocks.append(_table(["side", "ref", "sha"], [
        "<tr>" + _cell(_e(side)) + _cell(_e(info.refs.get(side, "-"))) + _cell(f"<code>{_e(sha)}</code>")
        + "</tr>" for side, sha in info.shas.items()]))
    decided = [r for r in gates if r["gate"] >= 0]
    blocks += ["<h2>Gates</h2>", _sweep_gates_table(decided) if decided else "<p>no gate verdicts</p>"]
    one_sided = [r for r in gates if r["gate"] < 0]
    if one_sided:
        blocks.append("<p>" + "; ".join(_e(f"{r['case']}: {r['verdict']} on {r['side']}") for r in one_sided)
                      + " (listed, never gated)</p>")
    if info.waivers:
        blocks += ["<h2>Waivers</h2>", _waiver_table(info)]
    blocks += ["<h2>Cases</h2>", "<ul>" + "".join(f"<li>{_link(c, case_path(c), 1)}</li>" for c in cases)
               + "</ul>"]
    return site_document(f"sweep {info.sweep_id}", 1, blocks)


def _waiver_table(info: SweepInfo) -> str:
    rows = ["<tr>" + "".join(_cell(_e(value)) for value in (
        w.action, w.case, w.side or "every side", "every gate" if w.gate is None else w.gate, w.reason, w.by,
        w.time)) + "</tr>" for w in info.waivers]
    return _table(["action", "case", "side", "gate", "reason", "by", "time"], rows)


def _sweep_gates_table(gates: list[dict]) -> str:
    rows = []
    for r in gates:
        verdict = _verdict(r)
        rows.append("<tr>" + "".join([
            _cell(_e(r["gate"])), _cell(_link(r["case"], case_path(r["case"]), 1)), _cell(_e(r["side"])),
            _cell(_e(r["metric"])), _cell(_e(r["bound"])),
            _cell(_e(verdict), "waived" if r["waived"] else HIGHLIGHTS.get(str(r["verdict"]))),
            _cell(_e(_interval(r))), _cell(_e(_percent(r["confidence"])))]) + "</tr>")
    return _table(["gate", "case", "side", "metric", "bound", "verdict", "ratio [interval]", "confidence"],
                  rows)


def _percent(value: object) -> str:
    number = float(value) if isinstance(value, int | float) else math.nan
    return "-" if math.isnan(number) else f"{100 * number:.2f}%"
