"""How steady each metric was: the report's ``round s.d.``, the s.d. of a cell's per-round log ratios
(the noise its interval reads), in the model, the terminal, Markdown, CSV and the HTML page; none
where the runs do not pair by round. Runs written by hand (``test_report``'s writer), from a seeded
model in which CPU time is steady and throughput is not, as on a shared host."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from test_report import GO2, write_run, write_sweep

from orchestrator.analysis.report_model import make_report
from orchestrator.cli.main import main

SWEEP = "steady-20260101T000000"
ROUNDS = 8


def write_rounds(root, *, order: str = "interleaved", blocks: bool = False) -> dict[str, np.ndarray]:
    """``ROUNDS`` rounds of both sides: the candidate does 1.10x the work, throughput with 6 % noise a
    run (a neighbour's bursts), cpu_ms with 0.4 %; the per-round log ratios the report must read.
    ``blocks``: each run keeps lockstep blocks, and a burst moves its whole throughput but not them."""
    rng = np.random.default_rng(39)
    write_sweep(root, SWEEP, [{"metric": "cpu_ms", "max_ratio": 1.05}], [GO2], repeats=ROUNDS)
    path = root / "sweeps" / f"{SWEEP}.json"
    record = json.loads(path.read_text())
    record["spec"] |= {"order": order, "metrics": ["throughput", "cpu_ms"]}
    path.write_text(json.dumps(record))
    logs: dict[str, list[float]] = {"throughput": [], "cpu_ms": []}
    for r in range(ROUNDS):
        values = {}
        for side, work in (("base", 1.0), ("cand", 1.1)):
            values[side] = {"throughput": 100.0 / work * math.exp(rng.normal(0, 0.06)),
                            "cpu_ms": 10.0 * work * math.exp(rng.normal(0, 0.004))}
            row = dict(values[side])
            if blocks:  # a burst moved the run's whole figure, not its blocks' median pair
                row |= {"throughput": row["throughput"] * math.exp(rng.normal(0, 0.3)),
                        "blocks": json.dumps(_blocks(values[side], burst=side == "cand"))}
            write_run(root, SWEEP, f"{side}{r}", side, GO2, repeat=r, **row)
        for metric in logs:
            logs[metric].append(math.log(values["cand"][metric] / values["base"][metric]))
    return {metric: np.array(found) for metric, found in logs.items()}


def _blocks(run: dict[str, float], burst: bool) -> list[dict]:
    """Three measured blocks of the run's figures, the second slowed by a burst where ``burst`` (so
    each round's block-pair median is still the figures' log ratio), and a warm-up block far off that
    no pair may read."""
    measured = [{"block": i + 1, "cycle": i, "steps": 5, "warmup": False,
                 "throughput": run["throughput"] / (3.0 if burst and i == 1 else 1.0),
                 "phases": {"cpu_ms": run["cpu_ms"]}} for i in range(3)]
    return [{"block": 0, "cycle": None, "steps": 5, "warmup": True, "throughput": 1.0,
             "phases": {"cpu_ms": 1000.0}}, *measured]


@pytest.mark.parametrize("order", ["interleaved", "lockstep"])
def test_each_metric_s_round_sd_is_the_sd_of_its_per_round_log_ratios(tmp_path, order):
    logs = write_rounds(tmp_path, order=order, blocks=order == "lockstep")
    report = make_report(tmp_path, SWEEP)
    for metric, expected in logs.items():
        row = report.row(GO2, "cand", metric)
        assert row.round_sd == pytest.approx(float(np.std(expected, ddof=1)), rel=1e-9), metric
        assert report.row(GO2, "base", metric).round_sd is None, "the baseline has no ratio"
    assert report.row(GO2, "cand", "cpu_ms").round_sd < report.row(GO2, "cand", "throughput").round_sd / 5
    (gate,) = report.gates
    assert gate.metric == "cpu_ms" and report.row(GO2, "cand", "cpu_ms").gate == 0


def test_every_output_shows_how_steady_each_metric_was(tmp_path, capsys):
    logs = write_rounds(tmp_path)
    assert main(["report", SWEEP, "--results", str(tmp_path), "--format", "html"]) in (0, 1, 4)
    out = capsys.readouterr().out
    sd = {metric: f"{100 * float(np.std(found, ddof=1)):.2g}%" for metric, found in logs.items()}
    table = out[out.index("round s.d."):out.index("gates")]
    for metric in logs:
        assert any(line.split()[0] == metric and line.split()[-1] == sd[metric]
                   for line in table.splitlines()[1:] if line.strip()), (metric, table)
    assert "cpu_ms" in out[out.index("gates"):].split("\n")[2], "the gates table names the metric it read"
    md = (tmp_path / "reports" / f"{SWEEP}.md").read_text()
    assert "| cand / base round s.d. |" in md
    assert f"| {sd['cpu_ms']} |" in md and f"| {sd['throughput']} |" in md
    csv = pd.read_csv(tmp_path / "reports" / f"{SWEEP}.csv").set_index(["side", "metric"])
    assert csv.loc[("cand", "cpu_ms"), "round_sd"] == pytest.approx(float(np.std(logs["cpu_ms"], ddof=1)))
    assert math.isnan(csv.loc[("base", "cpu_ms"), "round_sd"])
    html = (tmp_path / "reports" / f"{SWEEP}.html").read_text()
    assert "cand / base round s.d." in html and sd["cpu_ms"] in html


def test_runs_that_do_not_pair_by_round_have_no_round_sd(tmp_path, capsys):
    write_rounds(tmp_path, order="serial")
    report = make_report(tmp_path, SWEEP)
    assert report.row(GO2, "cand", "cpu_ms").round_sd is None
    assert report.row(GO2, "cand", "cpu_ms").comparison.paired is False
    main(["report", SWEEP, "--results", str(tmp_path)])
    md = (tmp_path / "reports" / f"{SWEEP}.md").read_text()
    assert next(line for line in md.splitlines() if line.startswith("| cpu_ms |")).endswith("| - |")
