"""One ratio: for the same cells, the report's tables (terminal, Markdown, CSV, HTML), the gates,
verdicts.json and ``compare`` give one figure, and where a gate's interval is read at another
confidence than 95 % the row it judges states the gate's interval, says its confidence, and the
report explains it in one line.

The results are those of an adaptive sweep (repeats 3, max_repeats 6): ``fast`` (4x the baseline)
decided at the first look and stopped after 3 rounds, while ``twin`` (a tight gate) kept the baseline
running to round 6, on a host that got faster from round 3 on. The baseline then has 6 runs and
``fast`` 3: the rounds both ran are what the paired interval compares, and so must the ratio.
"""

from __future__ import annotations

import html
import json

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from rich.console import Console

from orchestrator.analysis.compare_model import load_comparison
from orchestrator.analysis.report_model import make_report
from orchestrator.render.compare import comparison_markdown
from orchestrator.render.markdown import report_markdown, to_frame
from orchestrator.render.terminal import render_report
from orchestrator.render.verdicts_json import verdicts_document
from orchestrator.session.recorded import SweepRun
from orchestrator.session.reports import write_sweep_html
from orchestrator.spec.record import SweepRecord
from orchestrator.store.records import write_record

CASE = "sac/fake/none"
SHAS = {"base": "a" * 40, "fast": "b" * 40, "twin": "c" * 40}
BASE = [100.0, 104.0, 96.0, 130.0, 132.0, 128.0]  # the host got faster after round 3
VALUES = {"base": BASE, "fast": [400.0, 410.0, 395.0], "twin": [v * 1.001 for v in BASE]}


def sweep_html(root, report) -> str:
    """The sweep's HTML page, as ``shasweep report --format html`` writes it."""
    return write_sweep_html(SweepRun(report.sweep_id, root), report).read_text(encoding="utf-8")


def write_adaptive_sweep(root, sweep_id: str) -> None:
    spec = {"name": sweep_id.rsplit("-", 1)[0], "baseline": "base", "cases": [CASE], "repeats": 3,
            "max_repeats": 6, "sides": {side: {"ref": side} for side in SHAS}, "order": "interleaved",
            "order_seed": 0, "metrics": ["throughput"],
            "gates": [{"metric": "throughput", "side": "fast", "min_ratio": 0.9},
                      {"metric": "throughput", "side": "twin", "min_ratio": 0.999, "max_ratio": 1.001}]}
    write_record(root, SweepRecord.from_json({
        "sweep_id": sweep_id, "created": "2026-01-01T00:00:00+00:00", "status": "finished", "repo": "/repo",
        "planned_runs": 15, "spec": spec, "sides": {s: {"ref": s, "sha": sha} for s, sha in SHAS.items()},
        "adaptive": {"repeats": 3, "max_repeats": 6, "rounds": 6, "ended": "max_repeats reached"}}))
    for side, values in VALUES.items():
        for repeat, value in enumerate(values):
            row = {"sweep_id": sweep_id, "run_key": f"{side}{repeat}", "side": side, "ref": side,
                   "sha": SHAS[side], "case": CASE, "variant": "manager", "repeat": repeat, "order": 0,
                   "status": "ok", "throughput": value, "audit_git_sha": SHAS[side], "params": "{}",
                   "env": "{}",
                   "started_at": pd.Timestamp("2026-01-01", tz="UTC") + pd.Timedelta(minutes=repeat)}
            path = root / "runs" / f"sweep={sweep_id}" / f"{side}{repeat}.parquet"
            path.parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(pa.Table.from_pylist([row]), path)


@pytest.fixture
def root(tmp_path):
    write_adaptive_sweep(tmp_path, "adaptive-20260101T000000")
    write_adaptive_sweep(tmp_path, "adaptive-20260102T000000")
    return tmp_path


def test_report_compare_gates_and_verdicts_json_give_one_ratio(root):
    sweep = "adaptive-20260102T000000"
    report = make_report(root, sweep)
    (row,) = [r for r in report.rows if r.side == "fast"]
    gate = next(g for g in report.gates if g.side == "fast")
    assert row.ratio == pytest.approx(4.0), "median 400 over the baseline's median of the 3 rounds both ran"
    assert row.ratio == row.comparison.ratio == gate.ratio
    assert row.comparison == gate.comparison, "the row states the gate's figure"
    figure = f"{row.ratio:.3f}"

    console = Console(width=160, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(render_report(report, 160))
    terminal = console.export_text()
    assert f"{figure}  97.5% [" in terminal and f"| {figure} |" in report_markdown(report)
    assert to_frame(report).set_index("side").loc["fast", "ratio"] == pytest.approx(row.ratio)
    assert f"<td>{figure}</td>" in sweep_html(root, report)
    document = json.loads(json.dumps(verdicts_document(report)))
    assert next(v for v in document["verdicts"] if v["side"] == "fast")["ratio"] == pytest.approx(row.ratio)

    comparison = load_comparison(root, "adaptive-20260101T000000", sweep)
    (ratio,) = [r for r in comparison.ratios if r.side == "fast"]
    assert ratio.after.ratio == pytest.approx(row.ratio)
    assert f"{figure} -> {figure}" in comparison_markdown(comparison)


def test_a_gate_read_at_another_confidence_says_so_and_the_report_explains(root):
    report = make_report(root, "adaptive-20260102T000000")
    gate = next(g for g in report.gates if g.side == "fast")
    assert gate.comparison.confidence == pytest.approx(1 - 0.05 * 3 / 6), "the first look's share"
    console = Console(width=160, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(render_report(report, 160))
    terminal = console.export_text()
    assert "97.5% [" in terminal and "95% [" not in terminal, "each gated row states its gate's interval"
    note = "a row a gate judges states the gate's figure, its interval read at"
    for text in (terminal.replace("\n", " "), report_markdown(report),
                 html.unescape(sweep_html(root, report))):
        assert note in " ".join(text.split()), "one line explains why the two intervals differ"
    assert "97.5% CI [" in report_markdown(report)
