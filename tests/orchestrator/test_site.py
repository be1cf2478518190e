"""``shasweep site``: the results site built from a results root written by the real writer; the same
figures as the reports, incremental builds, and bad input (an empty root, damaged files, hostile
names, an ``--out`` inside the root or not writable)."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from site_lab import CASES, sweep_id_of, write_lab_sweep

from orchestrator.analysis.report_model import make_report
from orchestrator.analysis.site_model import case_view
from orchestrator.analysis.site_runs import GATE_COLUMNS
from orchestrator.analysis.site_sweeps import SweepInfo
from orchestrator.cli.main import main
from orchestrator.errors import EXIT_INVALID, EXIT_OK
from orchestrator.render import site_pages
from orchestrator.render.site_paths import INDEX, case_path, sweep_path
from orchestrator.render.site_plots import FilteredSources, metric_figures
from orchestrator.session import site_writing
from orchestrator.session.site import build_site
from orchestrator.store.records import append_entry
from orchestrator.store.site_state import load_site_state

SHIFT_AT = 6  # the cand side of the first case runs 10 % slower from this sweep on


def lab_root(tmp_path: Path, sweeps: int = 10, gates: list[dict] | None = None) -> Path:
    root = tmp_path / "results"
    for i in range(sweeps):
        write_lab_sweep(root, i, levels={(CASES[0], "cand"): 0.9 if i >= SHIFT_AT else 1.0}, gates=gates)
    return root


def settle(root: Path) -> None:
    """Date what was just written under ``root`` a minute back: a mark taken within seconds of a write
    is racy, and its sweep is read again at every build (``store.site_state``)."""
    now = time.time_ns()
    for path in [root, *root.rglob("*")]:
        if path.lstat().st_mtime_ns > now - 30 * 10**9:
            os.utime(path, ns=(now - 60 * 10**9,) * 2, follow_symlinks=False)


def page(out: Path, name: str) -> str:
    return (out / name).read_text(encoding="utf-8")


def test_the_site_shows_every_case_its_change_point_and_the_reports_figures(tmp_path):
    root = lab_root(tmp_path)
    built = build_site(root, tmp_path / "site")
    index = page(built.out, INDEX)
    for case in CASES:
        assert case_path(case) in index and (built.out / case_path(case)).is_file()
    rows = re.findall(r"<tr[^>]*>.*?</tr>", index.split("<tbody>", 1)[1], re.DOTALL)
    assert CASES[0] in rows[0] and "open regression" in rows[0], "the open regression comes first"
    shifted = sweep_id_of(SHIFT_AT)
    assert sweep_path(shifted) in rows[0] and "(worse)" in rows[0]
    assert re.search(r"side cand: -1\d\.\d% \[-1\d\.\d%, -\d\.\d%\]|side cand: -\d\.\d% \[", rows[0]), rows[0]
    assert '<tr class="open">' in index and "open regression" not in rows[1]
    # one figure per claim: each sweep page states the gates as the report decides them
    for i in (0, SHIFT_AT):
        sweep = page(built.out, sweep_path(sweep_id_of(i)))
        for gate in make_report(root, sweep_id_of(i)).gates:
            c = gate.comparison
            assert f"{c.ratio:.3f} [{c.low:.3f}, {c.high:.3f}]" in sweep
            assert f">{gate.verdict}<" in sweep
    case = page(built.out, case_path(CASES[0]))
    assert "change point: side cand" in case and "site-src-0" in case and 'name="xaxis"' in case
    assert "static/bokeh-" in case and "<script src=\"../static/site.js\"></script>" in case


def test_the_gate_bands_are_labelled_with_the_commits_of_the_series(tmp_path):
    """Both plots of the commit order share its x range; each names the commits at whole positions."""
    out = build_site(lab_root(tmp_path, sweeps=4), tmp_path / "site").out
    state = load_site_state(out)
    series, gates = state.series.to_pandas(), state.gates.to_pandas()
    infos = {s: SweepInfo.from_json(e["info"]) for s, e in state.sweeps.items()}
    view = case_view(CASES[0], series[series["case"] == CASES[0]], gates[gates["case"] == CASES[0]], infos)
    urls = {s: f"{s}.html" for s in view.sweeps}
    plots = metric_figures(view.metrics[0], view.sides, view.commits, urls, FilteredSources())["commit"]
    assert [p.name for p in plots] == ["series-commit", "gates-commit"] and len(view.commits) == 6
    for plot in plots:
        axis = plot.xaxis[0]
        assert axis.major_label_overrides == {i: sha[:8] for i, sha in enumerate(view.commits)}, plot.name
        assert axis.ticker.min_interval == 1


def test_a_second_build_writes_nothing_and_one_more_sweep_rewrites_only_what_it_touched(tmp_path):
    root = lab_root(tmp_path, sweeps=4)
    settle(root)
    out = tmp_path / "site"
    first = build_site(root, out)
    assert first.read == 4 and len(first.written) > 4
    again = build_site(root, out)
    assert again.written == [] and again.read == 0
    new = write_lab_sweep(root, 4, cases=(CASES[1],))
    settle(root)
    stamps = {p: p.stat().st_mtime_ns for p in out.rglob("*.html")}
    third = build_site(root, out)
    assert third.read == 1
    assert sorted(third.written) == sorted([INDEX, "sweeps.html", case_path(CASES[1]), sweep_path(new)])
    assert (out / case_path(CASES[0])).stat().st_mtime_ns == stamps[out / case_path(CASES[0])]
    assert new in page(out, case_path(CASES[1])) and new not in page(out, case_path(CASES[0]))


def test_pages_made_by_other_code_are_all_rendered_again(tmp_path, monkeypatch):
    """A site kept from an older shasweep (pages of another look) is brought to this one's pages by the
    next build, though no sweep changed."""
    root = lab_root(tmp_path, sweeps=4)
    settle(root)
    out = tmp_path / "site"
    document = site_pages.site_document
    with monkeypatch.context() as old:
        old.setattr(site_pages, "site_document", lambda *a: document(*a).replace("<nav>", "<!--old--><nav>"))
        old.setattr(site_writing, "renderer_id", lambda: "older", raising=False)
        build_site(root, out)
    pages = sorted(str(p.relative_to(out)) for p in out.rglob("*.html") if "<!--old-->" in p.read_text())
    assert len(pages) == 2 + len(CASES) + 4
    rebuilt = build_site(root, out)
    assert rebuilt.read == 0 and sorted(rebuilt.written) == pages
    assert not any("<!--old-->" in p.read_text() for p in out.rglob("*.html"))
    assert build_site(root, out).written == []


def test_a_waiver_recorded_later_closes_the_regression(tmp_path):
    """Without gates (whose later FAILs would keep it open), the change point alone is the regression."""
    root = lab_root(tmp_path, gates=[])
    settle(root)
    out = tmp_path / "site"
    build_site(root, out)
    append_entry(root, sweep_id_of(SHIFT_AT), "waivers", {
        "action": "waive", "case": CASES[0], "side": None, "gate": None, "reason": "accepted <slower>",
        "by": "lead", "time": "2026-02-01T00:00:00+00:00"})
    settle(root)
    rebuilt = build_site(root, out)
    assert sweep_path(sweep_id_of(SHIFT_AT)) in rebuilt.written
    index = page(out, INDEX)
    assert '<tr class="open">' not in index and "(0 open regressions)" in index and ", waived" in index
    assert "accepted &lt;slower&gt;" in page(out, sweep_path(sweep_id_of(SHIFT_AT)))
    assert "accepted &lt;slower&gt;" in page(out, case_path(CASES[0]))


@pytest.mark.parametrize("suite", [True, False])
def test_a_case_no_gate_reads_shows_a_suites_time_else_the_throughput(tmp_path, suite):
    root = tmp_path / "results"
    for i in range(3):
        write_lab_sweep(root, i, gates=[], suite=suite)
    index = page(build_site(root, tmp_path / "site").out, INDEX)
    metrics = re.findall(r"</a></td><td>([a-z_]+)</td>", index)
    assert metrics == ["time_ms" if suite else "throughput"] * len(CASES)


def test_a_current_verdicts_document_is_read_and_a_stale_one_is_not(tmp_path):
    root = lab_root(tmp_path, sweeps=2)
    sweep = sweep_id_of(1)
    document = {"format": 2, "sweep_id": sweep, "added": [], "removed": [], "verdicts": [
        {"gate": 0, "metric": "throughput", "case": CASES[0], "side": "cand", "bound": ">= 0.95x",
         "verdict": "PASS", "waived": False, "ratio": 1.234, "low": 1.111, "high": 1.357,
         "confidence": 0.95}]}
    path = root / "reports" / f"{sweep}.verdicts.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(document))
    out = tmp_path / "site"
    build_site(root, out)
    assert "1.234 [1.111, 1.357]" in page(out, sweep_path(sweep)), "the report's document is the figure"
    os.utime(path, ns=(1, 1))  # older than the runs and the record: decided from the runs instead
    build_site(root, tmp_path / "other")
    assert "1.234" not in page(tmp_path / "other", sweep_path(sweep))


def test_a_case_one_side_had_alone_is_listed_on_its_index_row(tmp_path):
    """The report's verdicts.json says a suite's case was added on cand: listed on the index, not gated."""
    root = lab_root(tmp_path, sweeps=2)
    sweep = sweep_id_of(1)
    document = {"format": 2, "sweep_id": sweep, "added": [{"case": CASES[1], "side": "cand"}], "removed": [],
                "verdicts": [{"gate": 0, "metric": "throughput", "case": CASES[0], "side": "cand",
                              "bound": ">= 0.95x", "verdict": "PASS", "waived": False, "ratio": 1.0,
                              "low": 0.99, "high": 1.01, "confidence": 0.95}]}
    (root / "reports").mkdir()
    (root / "reports" / f"{sweep}.verdicts.json").write_text(json.dumps(document))
    index = page(build_site(root, tmp_path / "site").out, INDEX)
    rows = {case: row for row in re.findall(r"<tr[^>]*>.*?</tr>", index.split("<tbody>", 1)[1], re.DOTALL)
            for case in CASES if f">{case}</a>" in row}
    assert f"{sweep}</a>: added on cand</td>" in rows[CASES[1]], rows[CASES[1]]
    assert "PASS 1.000 [0.990, 1.010] (cand)" in rows[CASES[0]] and "added" not in rows[CASES[0]]


def test_an_empty_root_gets_a_page_that_says_so(tmp_path, capsys):
    (tmp_path / "results").mkdir()
    assert main(["site", "--results", str(tmp_path / "results"), "--out", str(tmp_path / "site")]) == EXIT_OK
    assert 'id="empty"' in page(tmp_path / "site", INDEX)
    assert "No runs are recorded" in page(tmp_path / "site", INDEX)


def test_damaged_files_are_named_and_the_rest_is_built(tmp_path, capsys):
    root = lab_root(tmp_path, sweeps=3)
    damaged = sweep_id_of(1)
    for path in (root / "runs" / f"sweep={damaged}").glob("*.parquet"):
        path.write_bytes(b"not parquet")
        break
    (root / "sweeps" / f"{sweep_id_of(2)}.json").write_text("{not json")
    assert main(["site", "--results", str(root), "--out", str(tmp_path / "site")]) == EXIT_OK
    index = page(tmp_path / "site", INDEX)
    assert f"sweep {damaged}: file" in index and f"sweep {sweep_id_of(2)}: record unreadable" in index
    assert all(case_path(case) in index for case in CASES)
    assert "damaged: sweep" in capsys.readouterr().out


def with_infos(state: dict, info: object) -> dict:
    return {**state, "sweeps": {k: {**v, "info": info} for k, v in state["sweeps"].items()}}


EDITS = {  # a state.json edited or damaged by hand, each of a shape JSON allows
    "sweeps a list": lambda s: {**s, "sweeps": [1]},
    "a sweep's entry a number": lambda s: {**s, "sweeps": dict.fromkeys(s["sweeps"], 5)},
    "a sweep's info a list": lambda s: with_infos(s, [1]),
    "a sweep's info without its id": lambda s: with_infos(s, {}),
    "metrics null": lambda s: {**s, "metrics": None},
    "a table of other types": lambda s: s,
    "an index row without its fields": lambda s: {**s, "rows": dict.fromkeys(s["rows"], [{"case": "x"}])},
    "a bisect without steps": lambda s: {**s, "bisects": [{"case": None}]},
    "a page outside the site": lambda s: {**s, "pages": {**s["pages"], "../precious.txt": "0"}},
    "a copy outside the site": lambda s: {**s, "copies": {**s["copies"], "../precious.txt": [1, 2]}},
    "a copy at an absolute path": lambda s: {**s, "copies": {**s["copies"], "/tmp/precious.txt": [1, 2]}},
}


@pytest.mark.parametrize("edit", EDITS)
def test_an_edited_state_is_a_full_build_that_removes_nothing_outside_out(tmp_path, edit):
    """The state is a cache read from disk: one of another shape is not believed (every sweep is read
    again), and the pages and copies it names are never removed outside ``--out``."""
    root = lab_root(tmp_path, sweeps=3)
    settle(root)
    out = tmp_path / "site"
    build_site(root, out)
    state = out / ".shasweep-site" / "state.json"
    state.write_text(json.dumps(EDITS[edit](json.loads(state.read_text()))))
    if edit == "a table of other types":
        gates = pa.table({name: ["x"] for name in GATE_COLUMNS})  # "gate": "x", "ratio": "x"...
        pq.write_table(gates, out / ".shasweep-site" / "gates.parquet")
    precious = tmp_path / "precious.txt"
    precious.write_text("kept")
    rebuilt = build_site(root, out)
    assert rebuilt.read == 3 and precious.read_text() == "kept"
    assert all(case_path(case) in page(out, INDEX) for case in CASES)
    assert build_site(root, out).read == 0, "the state the full build wrote is believed again"


def test_hostile_names_are_shown_as_text_and_stay_inside_out(tmp_path):
    root = tmp_path / "results"
    hostile = "<script>alert(1)</script>/../../**x**\x1b[2J\u202e"
    sweep = write_lab_sweep(root, 0, cases=(hostile, "../../../etc/passwd"), sweep_id="lab-<i>x..%2f&amp;")
    out = tmp_path / "site"
    build_site(root, out)
    written = [p.resolve() for p in out.rglob("*") if p.is_file()]
    assert all(p.is_relative_to(out.resolve()) for p in written)
    assert not (tmp_path / "etc").exists()
    index = page(out, INDEX)
    assert "<script>alert(1)</script>" not in index and "&lt;script&gt;alert(1)&lt;/script&gt;" in index
    assert "\x1b" not in index and "\u202e" not in index and "**x**\\x1b[2J\\u202e" in index
    sweep_html = page(out, sweep_path(sweep))
    assert "<i>x" not in sweep_html and "lab-&lt;i&gt;x..%2f&amp;amp;" in sweep_html
    assert (out / case_path(hostile)).is_file()


@pytest.mark.parametrize("where", ["inside", "same", "holds"])
def test_out_inside_or_around_the_results_root_is_invalid_input(tmp_path, capsys, where):
    root = lab_root(tmp_path, sweeps=1)
    out = {"inside": root / "site", "same": root, "holds": tmp_path}[where]
    assert main(["site", "--results", str(root), "--out", str(out)]) == EXIT_INVALID
    error = capsys.readouterr().err
    assert "--out" in error and error.count("\n") == 1
    assert not (root / "site").exists()


def test_out_not_writable_and_a_missing_root_are_invalid_input(tmp_path, capsys):
    root = lab_root(tmp_path, sweeps=1)
    blocked = tmp_path / "file"
    blocked.write_text("x")
    assert main(["site", "--results", str(root), "--out", str(blocked / "site")]) == EXIT_INVALID
    assert "--out" in capsys.readouterr().err
    missing = ["site", "--results", str(tmp_path / "nowhere"), "--out", str(tmp_path / "s")]
    assert main(missing) == EXIT_INVALID
    assert "no results root" in capsys.readouterr().err
