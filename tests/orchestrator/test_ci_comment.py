"""What ``shasweep ci`` writes for a CI, from real reports of synthetic suites: the pull-request comment
(under 4 kB whatever the suite; the gates' own ratios and decided intervals), the job summary
(under 60 kB for 400 cases) and the step outputs."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from orchestrator.analysis.decided import clear_changes
from orchestrator.analysis.report_model import make_report
from orchestrator.render.ci_comment import (
    MARKER,
    MAX_BYTES,
    MAX_ROWS,
    Compared,
    changes,
    ci_comment,
    note_comment,
    report_values,
)
from orchestrator.render.ci_outputs import dotenv_text, github_output_text
from orchestrator.render.gh_summary import gh_markdown
from orchestrator.render.markdown import md_text
from orchestrator.render.terminal import report_verdict_line
from orchestrator.spec.record import SweepRecord
from orchestrator.store.records import write_record

SWEEP = "ci-20260101T000000"
SHAS = {"base": "a" * 40, "head": "b" * 40}
COMPARED = Compared(
    head="b" * 40,
    merge_base="a" * 40,
    base_ref="origin/main",
    suite="pytest-benchmark tests",
    report="https://github.example/o/r/actions/runs/7",
    budget="10m",
)


def write_suite(root, ratios: dict[str, float], rounds: int = 6, noise: float = 0.004,
                one_sided: dict[str, str] | None = None) -> None:
    """One results file of a ci sweep: ``ratios`` maps each case to head's time over base's."""
    rng = np.random.default_rng(11)
    rows = []
    for number, (case, ratio) in enumerate(ratios.items()):
        for side, factor in (("base", 1.0), ("head", ratio)):
            if (one_sided or {}).get(case, side) != side:
                continue
            for i in range(rounds):
                time_ms = 1.0 * factor * float(np.exp(rng.normal(0, noise)))
                rows.append(
                    {
                        "sweep_id": SWEEP,
                        "run_key": f"{side}-{number}-{i}",
                        "side": side,
                        "ref": side,
                        "sha": SHAS[side],
                        "case": case,
                        "variant": "manager",
                        "repeat": i,
                        "order": i,
                        "status": "ok",
                        "error": None,
                        "wall_s": 1.0,
                        "params": "{}",
                        "env": "{}",
                        "time_ms": time_ms,
                        "throughput": 1000 / time_ms,
                        "protocol": "pytest-benchmark",
                    }
                )
    path = root / "runs" / f"sweep={SWEEP}" / "all.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)
    spec = {
        "name": "ci",
        "baseline": "base",
        "cases": ["*"],
        "repeats": rounds,
        "max_repeats": 40,
        "sides": {s: {"ref": sha} for s, sha in SHAS.items()},
        "order": "interleaved",
        "order_seed": 0,
        "metrics": ["time_ms"],
        "protocol": "pytest-benchmark",
        "command": ["{python}", "{result}"],
        "gates": [{"metric": "time_ms", "max_ratio": 1.02}],
    }
    write_record(
        root,
        SweepRecord.from_json(
            {
                "sweep_id": SWEEP,
                "created": "2026-01-01T00:00:00+00:00",
                "status": "finished",
                "repo": "/repo",
                "planned_runs": len(rows),
                "spec": spec,
                "adaptive": {
                    "repeats": 3,
                    "max_repeats": 40,
                    "rounds": rounds,
                    "ended": "every gate decided",
                },
                "sides": {s: {"ref": sha, "sha": sha, "variant": "manager"} for s, sha in SHAS.items()},
                "host": {"cpu_model": "Test CPU", "cpu_logical": 2},
            }
        ),
    )


def suite_of(size: int, slower: int = 1, faster: int = 1, name: str = "bench/test_x.py::test_{}") -> dict:
    ratios = {name.format(i): 1.0 for i in range(size)}
    for i in range(slower):
        ratios[name.format(i)] = 1.10 + 0.01 * i
    for i in range(slower, slower + faster):
        ratios[name.format(i)] = 0.9
    return ratios


@pytest.fixture(scope="module")
def report400(tmp_path_factory):
    root = tmp_path_factory.mktemp("ci400")
    ratios = {**suite_of(400), "bench/test_new.py::test_new": 1.0, "bench/test_old.py::test_old": 1.0}
    write_suite(root, ratios, one_sided={"bench/test_new.py::test_new": "head",
                                         "bench/test_old.py::test_old": "base"})
    return make_report(root, SWEEP)


def test_the_comment_lists_the_clear_changes_with_their_one_figure(report400):
    text = ci_comment(report400, COMPARED)
    lines = text.splitlines()
    verdict_line = md_text(report_verdict_line(report400))
    assert lines[0] == MARKER and lines[1] == f"### shasweep: FAIL — {verdict_line}"
    assert "FAIL 1" in lines[1] and "exit 1" in lines[1]
    figures = {f.case.split("::")[-1]: f for f in report400.decided}
    fail, faster = figures["test_0"], figures["test_1"]
    assert fail.gate.verdict == "FAIL" and faster.gate.verdict == "PASS" and faster.clear
    c = fail.comparison  # the interval the gate decided on
    assert (f"| bench/test_x.py::test_0 | time_ms | {fail.ratio:.3f} | [{c.low:.3f}, {c.high:.3f}] at "
            f"{100 * c.confidence:.4g} % | FAIL <= 1.02x |") in lines
    f = faster.family  # what makes a change that passed clear: the family-wise interval
    interval = f"[{f.low:.3f}, {f.high:.3f}] at {100 * f.confidence:.4g} %"
    assert f"| {faster.ratio:.3f} | {interval} | PASS <= 1.02x |" in text
    assert lines.index(next(line for line in lines if "test_0 |" in line)) < lines.index(
        next(line for line in lines if "test_1 |" in line)), "a FAIL first"
    quiet = len(report400.decided) - len(clear_changes(report400.decided))
    assert f"No change beyond noise in {quiet} cases." in text and quiet == 398
    assert "Added (not gated): 1 case: bench/test_new.py::test_new." in lines
    assert "Removed (not gated): 1 case: bench/test_old.py::test_old." in lines
    assert lines[-1] == "Full report: <https://github.example/o/r/actions/runs/7>"
    assert "`bbbbbbbbbbbb` against the merge base `aaaaaaaaaaaa` with origin/main" in text
    assert len(text.encode()) <= MAX_BYTES


def test_the_comment_stays_under_4_kb_whatever_changes(report400):
    long = "bench/" + "deep/" * 40 + "test_x.py::test_{}[" + "p" * 300 + "]"
    fail = next(f for f in report400.decided if f.gate is not None and f.gate.verdict == "FAIL")
    figures = [replace(fail, case=long.format(i)) for i in range(10_000)]
    many = replace(report400, decided=figures, cases=[f.case for f in figures])
    text = ci_comment(many, COMPARED)
    assert len(text.encode()) <= MAX_BYTES
    rows = [line for line in text.splitlines() if line.startswith("| bench/")]
    assert len(changes(many)) == 10_000 and len(rows) == MAX_ROWS and all(len(r) < 300 for r in rows)
    assert "more clear changes in the full report" in text and text.splitlines()[0] == MARKER
    assert text.rstrip().endswith("Full report: <https://github.example/o/r/actions/runs/7>")


def test_the_job_summary_of_400_cases_stays_under_60_kb(report400):
    text = gh_markdown(report400)
    assert len(text.encode()) < 60_000 and "All cases: 402 cases" in text


def test_the_step_outputs_count_what_the_comment_says(report400):
    values = report_values(report400)
    counts = Counter(g.verdict for g in report400.gates)
    assert values == {"verdict": "FAIL", "exit-code": "1", "pass": str(counts["PASS"]), "fail": "1",
                      "inconclusive": str(counts["INCONCLUSIVE"]), "no-data": "0", "waived": "0",
                      "changed": str(len(clear_changes(report400.decided))), "added": "1", "removed": "1",
                      "cases": "402", "sweep-id": SWEEP}
    assert github_output_text({"a": "1", "b": "x\ny"}).splitlines()[0] == "a=1"
    delimited = github_output_text({"b": "x\ny"}).splitlines()
    assert delimited[0].startswith("b<<SHASWEEP_") and delimited[1:3] == ["x", "y"]
    assert delimited[3] == delimited[0][3:]
    assert dotenv_text({"exit-code": "1", "report": "a\nb"}) == "SHASWEEP_EXIT_CODE=1\nSHASWEEP_REPORT=a b\n"


def test_an_error_comment_is_one_escaped_line():
    why = "--base: 'x' is not in this shallow clone: <b>"
    text = note_comment("ERROR — nothing compared (exit 2)", why, None)
    assert text.splitlines()[:2] == [MARKER, "### shasweep: ERROR — nothing compared (exit 2)"]
    assert "\\<b>" in text and len(text.splitlines()) == 4  # escaped: no HTML (markdown.md_text)
