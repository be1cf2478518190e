"""The HTML sweep report: self-contained page, the plots per case, highlighted verdicts and audit failures."""

from __future__ import annotations

from html.parser import HTMLParser

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_report import G1, GO2, SHAS, write_go2_runs, write_run, write_sweep

from orchestrator.analysis.plotted_runs import load_steps
from orchestrator.cli.main import main
from orchestrator.errors import EXIT_RUN_FAILED
from orchestrator.render.plots import UPDATE_STATE_REST, breakdown_phases, per_run_plot, phase_medians
from orchestrator.render.sweep_page import timeline_phase

SWEEP = "ab-20260101T000000"
GATES = [{"metric": "throughput", "min_ratio": 1.5, "max_ratio": None, "case": None, "side": None},
         {"metric": "physics_ms", "max_ratio": 0.4, "min_ratio": None, "case": None, "side": None}]
FIGURES_PER_CASE = 3  # throughput per run, phase breakdown, per-step timeline
FIGURES_ONE_PHASE = 2  # a case whose runs report one phase: no breakdown of it
FOREST_PLOTS = 2  # one per gate metric


def write_steps(root, sweep_id: str, key: str, phase_ms: dict[str, float], warmup: int = 2,
                measure: int = 6) -> None:
    """A steps file in the documented long format; warm-up steps take three times as long."""
    rows = [{"sweep_id": sweep_id, "run_key": key, "step": step, "warmup": step < warmup, "phase": phase,
             "ms": ms * (3.0 if step < warmup else 1.0)}
            for step in range(warmup + measure) for phase, ms in phase_ms.items()]
    path = root / "steps" / f"sweep={sweep_id}" / f"{key}.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)


def make_results(root) -> None:
    """Go2: 3 + 3 ok runs and a candidate run that loaded the wrong SHA; G1: baseline runs only, which
    report one phase and no warm-up steps."""
    write_sweep(root, SWEEP, GATES, [GO2, G1])
    write_go2_runs(root, SWEEP)
    write_run(root, SWEEP, "c3", "cand", GO2, throughput=150.0, physics_ms=5.0, audit_git_sha=SHAS["base"])
    for i in range(3):
        write_run(root, SWEEP, f"g1b{i}", "base", G1, throughput=50.0 + i, physics_ms=3.0)
    for key in ("b0", "b1", "b2", "c0", "c1", "c2", "c3"):
        env_step_ms = 12.0 if key.startswith("b") else 7.0
        write_steps(root, SWEEP, key, {"env_step_ms": env_step_ms, "physics_ms": 5.0})
    for key in ("g1b0", "g1b1", "g1b2"):
        write_steps(root, SWEEP, key, {"env_step_ms": 7.0}, warmup=0)


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> str:
    root = tmp_path_factory.mktemp("results")
    make_results(root)
    assert main(["report", SWEEP, "--results", str(root), "--format", "html"]) == EXIT_RUN_FAILED
    return (root / "reports" / f"{SWEEP}.html").read_text(encoding="utf-8")


class _LinkedUrls(HTMLParser):
    """Every src/href attribute of the page's elements (script text is not parsed as tags)."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.urls += [value or "" for name, value in attrs if name in ("src", "href")]


def test_the_page_is_self_contained(page):
    parser = _LinkedUrls()
    parser.feed(page)
    assert parser.urls == [], "no element loads anything: BokehJS, CSS and data are inline"
    assert "Bokeh.embed.embed_items" in page and len(page) > 500_000, "BokehJS is inlined"


def test_every_case_has_its_plots_and_no_breakdown_of_one_phase_nor_shading_without_warm_up(page):
    assert page.count("data-root-id=") == FIGURES_PER_CASE + FIGURES_ONE_PHASE + FOREST_PLOTS
    for title in ("throughput per run", "phase breakdown", "env_step_ms per vector step (warm-up shaded)"):
        assert page.count(f"{GO2}: {title}") == 1
    assert page.count(f"{G1}: throughput per run") == 1 and f"{G1}: phase breakdown" not in page
    assert page.count(f"{G1}: env_step_ms per vector step") == 1 and f"{G1}: env_step_ms per vector step (" \
        not in page, "no warm-up step: nothing is shaded, and the title does not say it is"


def test_verdicts_and_audit_failures_are_highlighted(page):
    assert '<td class="pass">PASS</td>' in page and '<td class="fail">FAIL</td>' in page
    assert '<td class="fail">audit_failed</td>' in page
    assert f"audit: loaded SHA {SHAS['base']} is not the requested {SHAS['cand']}" in page
    assert "no ok runs" in page, "G1's candidate side ran nothing"


def test_the_verdict_banner_comes_first_and_each_gate_metric_has_a_forest_plot(page):
    body = page[page.index("</head>"):]
    banner = body.index('<div class="banner fail" id="verdict">')
    assert banner < body.index("<ul>") and banner < body.index("<table>")
    assert "PASS 1 / FAIL 1 / INCONCLUSIVE 0 / NO DATA 2 — exit 3 (1 run(s) not ok, 2 not run)" in body
    assert page.count("gates on throughput") == 1 and page.count("gates on physics_ms") == 1


def test_the_sides_table_is_compact_with_the_full_text_on_hover(page):
    sides = page[page.index("<h2>Sides</h2>"):]
    sides = sides[:sides.index("</table>")]
    assert f'<td title="{SHAS["cand"]}">{SHAS["cand"][:10]}</td>' in sides
    assert SHAS["cand"] not in sides.replace(f'title="{SHAS["cand"]}"', "").replace(f'title="{SHAS["base"]}, '
                                                                                  f'{SHAS["cand"]}"', "")


def test_forest_plot_draws_every_interval_and_bound_inside_its_range():
    from bokeh.models import Span

    from orchestrator.analysis.stats import Comparison
    from orchestrator.analysis.verdicts import GateVerdict
    from orchestrator.render.forest import forest_plot, gate_bounds
    from orchestrator.spec.schema import GateSpec

    wide = Comparison(1.02, 0.70, 1.40, 0.95, 0.5, 5, 5, True)
    tight = Comparison(0.80, 0.78, 0.83, 0.95, 0.01, 5, 5, True)
    verdicts = [GateVerdict(0, "throughput", "a/b/c", "x", ">= 0.9x", wide, "INCONCLUSIVE", ""),
                GateVerdict(0, "throughput", "a/b/d", "x", ">= 0.9x", tight, "FAIL", "")]
    bounds = gate_bounds([GateSpec(metric="throughput", min_ratio=0.9)], verdicts)
    assert bounds == [0.9]
    fig = forest_plot("throughput", verdicts, bounds, "gates on throughput")
    assert fig.x_range.start < 0.70 and fig.x_range.end > 1.40, "no interval end is cut"
    spans = [s.location for s in fig.center if isinstance(s, Span)]
    assert 0.9 in spans and 1.0 in spans
    assert list(fig.y_range.factors) == ["a/b/d · x", "a/b/c · x"]


def test_paired_runs_are_joined_per_round_and_disturbed_runs_ringed():
    from bokeh.models import MultiLine, Scatter

    runs = pd.DataFrame({"side": ["a", "b", "a", "b"], "repeat": [0, 0, 1, 1], "status": ["ok"] * 4,
                         "throughput": [100.0, 120.0, 90.0, 115.0], "run_key": list("wxyz"), "sha": ["s"] * 4,
                         "disturbed": [False, False, True, False]})
    fig = per_run_plot(runs, ["a", "b"], "t", paired=True, y_label="throughput (env steps / s)")
    (lines,) = [r for r in fig.renderers if isinstance(r.glyph, MultiLine)]
    assert lines.data_source.data["ys"] == [[100.0, 120.0], [90.0, 115.0]]
    rings = [r for r in fig.renderers if isinstance(r.glyph, Scatter) and r.glyph.fill_alpha == 0]
    assert len(rings) == 1 and rings[0].data_source.data["run_key"] == ["y"]
    assert fig.y_range.end > 120.0, "the highest point is inside the frame"
    unpaired = per_run_plot(runs, ["a", "b"], "t", paired=False, y_label="throughput (env steps / s)")
    assert not [r for r in unpaired.renderers if isinstance(r.glyph, MultiLine)]


def test_breakdown_splits_update_state_into_its_subphases():
    runs = pd.DataFrame({
        "side": ["a", "a", "b"], "status": ["ok", "ok", "failed"],
        "physics_ms": [10.0, 12.0, 1.0], "update_state_ms": [4.0, 6.0, 1.0], "d2h_ms": [0.0, 0.0, 0.0],
        "update_state.command.compute_ms": [1.0, 1.0, 1.0], "update_state.reward.compute_ms": [2.0, 3.0, 1.0],
    })
    assert breakdown_phases(runs) == ["physics_ms", "update_state.command.compute_ms",
                                      "update_state.reward.compute_ms", UPDATE_STATE_REST, "reset_done_ms",
                                      "d2h_ms", "apply_action_ms", "policy_ms", "replay_ms"]
    medians = phase_medians(runs, ["a", "b"])
    assert list(medians.columns) == ["physics_ms", "update_state.command.compute_ms",
                                     "update_state.reward.compute_ms", UPDATE_STATE_REST], "0 phases dropped"
    assert medians.loc["a"].tolist() == [11.0, 1.0, 2.5, 1.5]
    assert medians.loc["b"].tolist() == [0.0] * 4, "side b has no ok run"


def test_timeline_uses_the_broadest_phase_the_steps_report(tmp_path):
    write_steps(tmp_path, SWEEP, "r", {"physics_ms": 1.0, "env_step_ms": 2.0, "policy_ms": 3.0})
    steps = load_steps(tmp_path, SWEEP)
    assert set(steps["phase"]) == {"physics_ms", "env_step_ms"}, "only timeline candidates are read"
    assert timeline_phase(steps) == "env_step_ms"
    assert timeline_phase(load_steps(tmp_path, "other-20260101T000000")) is None


def test_breakdown_of_a_case_without_ok_runs_is_an_empty_chart():
    """A cancelled or all-failed case still renders (no legend to place), instead of crashing the report."""
    from orchestrator.render.plots import breakdown_plot

    runs = pd.DataFrame({"side": ["a", "b"], "status": ["cancelled", "failed"],
                         "physics_ms": [None, None], "update_state_ms": [None, None]})
    fig = breakdown_plot(runs, ["a", "b"], "no ok run")
    assert not fig.legend


def test_runs_the_report_lists_as_disturbed_are_marked():
    from types import SimpleNamespace

    from orchestrator.analysis.plotted_runs import mark_disturbed

    runs = pd.DataFrame({"run_key": ["a", "b", "c"]})
    report = SimpleNamespace(disturbed=pd.DataFrame({"run_key": ["b"], "reason": ["load 9 on 2 CPUs"]}))
    assert mark_disturbed(runs, report)["disturbed"].tolist() == [False, True, False]
    assert "disturbed" not in mark_disturbed(runs, SimpleNamespace())
