"""``shasweep report --format bmf|junit|gh`` on a hand-made results root: BMF against Bencher's
documented JSON schema, JUnit against the shape pytest's own ``--junitxml`` writes, the GitHub summary's
order, size cap and escaping."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET

import jsonschema
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from orchestrator.analysis.report_model import make_report
from orchestrator.cli.main import main
from orchestrator.errors import EXIT_GATE_FAILED, EXIT_INVALID
from orchestrator.render.bmf import bmf_document
from orchestrator.render.gh_summary import gh_markdown
from orchestrator.render.junit import junit_xml
from orchestrator.spec.record import SweepRecord
from orchestrator.store.records import write_record

SWEEP = "suite-20260101T000000"
SHAS = {"base": "a" * 40, "cand": "b" * 40}
ODD = 'bench<1>|"&\' `x` **y** [z](http://e) \x01'  # a case name as a suite might spell it
# Bencher Metric Format's JSON schema as its reference page documents it
BMF_SCHEMA = {
    "type": "object",
    "patternProperties": {".+": {"type": "object", "patternProperties": {".+": {
        "type": "object", "properties": {"value": {"type": "number"}, "lower_value": {"type": "number"},
                                         "upper_value": {"type": "number"}},
        "required": ["value"]}}}},
}
# case -> the candidate's time per call against the baseline's (1.0: the same), and the run noise
CASES = {"slow": (1.3, 0.01), "same": (1.0, 0.005), "noisy": (1.02, 0.2), ODD: (1.0, 0.005)}


def write_suite_sweep(root, rounds: int = 4) -> None:
    """A sweep of ``CASES`` with a time_ms gate, runs drawn with a fixed seed."""
    rng = np.random.default_rng(7)
    for number, (case, (ratio, noise)) in enumerate(CASES.items()):
        for side, factor in (("base", 1.0), ("cand", ratio)):
            for i in range(rounds):
                time_ms = 2.0 * factor * float(np.exp(rng.normal(0, noise)))
                row = {"sweep_id": SWEEP, "run_key": f"{side}-{number}-{i}", "side": side, "ref": side,
                       "sha": SHAS[side], "case": case, "variant": "manager", "repeat": i, "order": i,
                       "status": "ok", "error": None, "wall_s": 1.0, "params": "{}", "env": "{}",
                       "time_ms": time_ms, "throughput": 1000 / time_ms, "protocol": "pyperf"}
                path = root / "runs" / f"sweep={SWEEP}" / f"{row['run_key']}.parquet"
                path.parent.mkdir(parents=True, exist_ok=True)
                pq.write_table(pa.Table.from_pylist([row]), path)
    spec = {"name": "suite", "baseline": "base", "cases": list(CASES), "repeats": rounds,
            "sides": {"base": {"ref": "main"}, "cand": {"ref": "feature"}}, "order": "interleaved",
            "order_seed": 0, "metrics": ["time_ms", "throughput"], "protocol": "pyperf",
            "gates": [{"metric": "time_ms", "max_ratio": 1.05}]}
    write_record(root, SweepRecord.from_json({
        "sweep_id": SWEEP, "created": "2026-01-01T00:00:00+00:00", "status": "finished", "repo": "/repo",
        "planned_runs": len(CASES) * 2 * rounds, "spec": spec,
        "sides": {s: {"ref": spec["sides"][s]["ref"], "sha": SHAS[s], "variant": "manager"} for s in SHAS},
        "host": {"cpu_model": "Test CPU", "cpu_logical": 2}}))


@pytest.fixture
def report(tmp_path):
    write_suite_sweep(tmp_path)
    return make_report(tmp_path, SWEEP)


def verdicts_of(report) -> dict[str, str]:
    return {g.case: g.verdict for g in report.gates}


def test_the_fixture_has_each_verdict(report):
    assert verdicts_of(report) == {"slow": "FAIL", "same": "PASS", "noisy": "INCONCLUSIVE", ODD: "PASS"}


def test_a_suite_report_sorts_its_cases_by_change_with_a_geometric_mean_row(report, tmp_path):
    from orchestrator.render.markdown import report_markdown

    (suite,) = report.suites
    assert suite.side == "cand" and suite.metric == "time_ms" and suite.paired and suite.rounds == 4
    assert suite.cases[0] == "slow" and set(suite.cases) == set(CASES)
    ratios = {r.case: r.ratio for r in report.rows if r.side == "cand" and r.metric == "time_ms"}
    changes = [abs(np.log(ratios[case])) for case in suite.cases]
    assert changes == sorted(changes, reverse=True)
    assert suite.low < suite.geomean < suite.high
    runs = pd.read_parquet(tmp_path / "runs").pivot_table(index="repeat", columns=["case", "side"],
                                                          values="time_ms")
    logs = np.log(runs.xs("cand", axis=1, level="side")) - np.log(runs.xs("base", axis=1, level="side"))
    assert suite.geomean == pytest.approx(float(np.exp(logs.to_numpy().mean())), rel=1e-12)
    md = report_markdown(report)
    section = md[md.index("## Suite: time_ms, cand / base"):]
    assert section.index("| slow |") < section.index("| same |")
    assert f"| geometric mean (4 cases, 4 rounds, paired) |  |  | {suite.geomean:.3f} | 95% CI" in section


def test_bmf_follows_bencher_schema_with_medians_and_ratio_intervals(report):
    document = bmf_document(report)
    jsonschema.validate(document, BMF_SCHEMA)
    json.dumps(document, allow_nan=False)
    assert set(document) == set(CASES)
    rows = {(r.case, r.metric): r for r in report.rows if r.side == "cand"}
    for case, measures in document.items():
        assert set(measures) == {"time_ms", "time_ms-ratio", "throughput", "throughput-ratio"}
        row = rows[case, "time_ms"]
        assert measures["time_ms"] == {"value": row.summary.median, "lower_value": row.summary.min,
                                       "upper_value": row.summary.max}
        ratio = measures["time_ms-ratio"]
        assert ratio == {"value": row.comparison.ratio, "lower_value": row.comparison.low,
                         "upper_value": row.comparison.high}
        assert ratio["lower_value"] <= ratio["value"] <= ratio["upper_value"]
    base = bmf_document(report, "base")
    assert "time_ms-ratio" not in base["slow"], "the baseline has no ratio to itself"


def _pytest_junit(tmp_path) -> ET.Element:
    """What pytest's own --junitxml writes for a pass, a failure and a skip."""
    (tmp_path / "test_shape.py").write_text(
        "import pytest\n\ndef test_pass():\n    pass\n\ndef test_fail():\n    assert 1 == 2, 'no'\n\n"
        "def test_skip():\n    pytest.skip('why')\n")
    out = tmp_path / "pytest.xml"
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_shape.py",
                    f"--junitxml={out}"], cwd=tmp_path, capture_output=True, timeout=600)
    return ET.parse(out).getroot()


def _attributes_by_tag(root: ET.Element) -> dict[str, set[str]]:
    shape: dict[str, set[str]] = {}
    for element in root.iter():
        shape.setdefault(element.tag, set()).update(element.attrib)
    return shape


def test_junit_has_the_shape_pytest_writes(report, tmp_path):
    ours = ET.fromstring(junit_xml(report).encode())
    theirs = _pytest_junit(tmp_path)
    assert ours.tag == theirs.tag == "testsuites"
    assert [child.tag for child in ours] == [child.tag for child in theirs] == ["testsuite"]
    pytest_shape, our_shape = _attributes_by_tag(theirs), _attributes_by_tag(ours)
    for tag in ("testsuites", "testsuite", "testcase", "failure", "skipped"):
        assert our_shape[tag] == pytest_shape[tag], tag  # the same attributes on every element pytest writes
    suite = ours[0]
    cases = list(suite)
    assert all(case.tag == "testcase" for case in cases) and len(cases) == len(CASES)
    outcomes = {case.get("name"): [child.tag for child in case] for case in cases}
    counts = {tag: sum(tag in tags for tags in outcomes.values()) for tag in ("failure", "skipped", "error")}
    assert suite.get("tests") == str(len(cases)) and suite.get("failures") == str(counts["failure"]) == "1"
    assert suite.get("skipped") == str(counts["skipped"]) == "1" and suite.get("errors") == "0"
    failure = suite.find("testcase/failure")
    slow = next(g for g in report.gates if g.case == "slow")
    assert failure.get("message") == (f"FAIL: ratio {slow.ratio:.4g} outside <= 1.05x, 95% CI "
                                      f"[{slow.comparison.low:.3f}, {slow.comparison.high:.3f}]")
    skipped = suite.find("testcase/skipped")
    noisy = next(g for g in report.gates if g.case == "noisy")
    assert skipped.get("message") == f"INCONCLUSIVE: {noisy.reason}"
    odd = next(name for name in outcomes if "bench<1>" in name)
    assert odd == 'gate 0: bench<1>|"&\' `x` **y** [z](http://e) \\x01 [cand] <= 1.05x', "escaped, read back"


def test_junit_skips_no_data_and_waived_and_errors_runs_not_ok(report):
    from dataclasses import replace

    gates = [replace(report.gates[0], verdict="NO DATA", reason="no ok runs of side cand"),
             replace(next(g for g in report.gates if g.case == "slow"), waived="known, fixed in #12")]
    failures = pd.DataFrame([{"run_key": "k1", "case": "same", "side": "cand", "status": "timeout",
                              "error": "no exit after timeout_s=60"}])
    suite = ET.fromstring(junit_xml(replace(report, gates=gates, failures=failures)).encode())[0]
    messages = [(child.tag, child.get("message")) for case in suite for child in case]
    assert messages == [("skipped", "NO DATA: no ok runs of side cand"),
                        ("skipped", "FAIL: waived: known, fixed in #12"),
                        ("error", "timeout: no exit after timeout_s=60")]
    assert (suite.get("failures"), suite.get("skipped"), suite.get("errors")) == ("0", "2", "1")


def test_gh_summary_verdict_first_changes_then_collapsed_table(report):
    text = gh_markdown(report)
    lines = text.splitlines()
    assert lines[0] == f"### shasweep {SWEEP}: PASS 2 / FAIL 1 / INCONCLUSIVE 1 — exit 1"
    details = text.index("<details>")
    changed = text[:details]
    assert "| slow | cand | time_ms |" in changed and "| same |" not in changed
    assert "FAIL" in changed and text.rstrip().endswith("</details>")
    full = text[details:]
    assert all(f"| {case} |" in full for case in ("slow", "same", "noisy"))
    assert "| bench<1>\\|\"&' \\`x\\` \\*\\*y\\*\\* [z]\\(http\\://e) \\\\x01 |" in full
    assert "[z](" not in text and "\x01" not in text


def test_gh_summary_stays_under_its_size_cap(report):
    from dataclasses import replace

    many = replace(report, rows=report.rows * 400, cases=report.cases * 400)
    text = gh_markdown(many, max_bytes=60_000)
    assert len(text.encode()) <= 60_000 and text.rstrip().endswith("</details>")
    assert "more rows: see the full report" in text


def test_cli_writes_each_format_and_returns_the_exit_code(tmp_path, capsys):
    write_suite_sweep(tmp_path)
    out = tmp_path / "junit.xml"
    assert main(["report", SWEEP, "--results", str(tmp_path), "--format", "junit", "--out", str(out)]) \
        == EXIT_GATE_FAILED
    assert ET.parse(out).getroot().tag == "testsuites" and capsys.readouterr().out == ""
    assert main(["report", SWEEP, "--results", str(tmp_path), "--format", "bmf"]) == EXIT_GATE_FAILED
    assert set(json.loads(capsys.readouterr().out)) == set(CASES)
    assert main(["report", SWEEP, "--results", str(tmp_path), "--format", "bmf", "--side", "nope"]) \
        == EXIT_INVALID
    assert "--side: sweep suite-20260101T000000 has no side 'nope'" in capsys.readouterr().err
    assert main(["report", SWEEP, "--results", str(tmp_path), "--out", str(out)]) == EXIT_INVALID
    assert "--out: applies to --format bmf, junit, gh only" in capsys.readouterr().err
