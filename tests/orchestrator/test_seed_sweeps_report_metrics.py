"""The sweep's ``metrics`` list: validation, the report's rows, and metrics no run reported."""

from __future__ import annotations

import pytest
import test_report as runs_fixture  # the documented runs schema written by hand (write_run, write_sweep)

from orchestrator.analysis.report_model import make_report
from orchestrator.errors import SpecError
from orchestrator.render.markdown import report_markdown
from orchestrator.spec.load import load_spec
from orchestrator.spec.schema import REPORT_METRICS
from orchestrator.store.records import read_record, write_record

GO2 = runs_fixture.GO2
SUB_PHASES = ["update_state.command.compute_ms", "update_state.command.post_compute_ms"]
BASE_YAML = """
name: m
sides: {a: {ref: HEAD}, b: {ref: HEAD}}
baseline: a
cases: [sac/go2_joystick_flat/mujoco]
"""


def spec_with(tmp_path, *dotlist: str):
    path = tmp_path / "sweep.yaml"
    path.write_text(BASE_YAML)
    return load_spec(path, dotlist)


def test_metrics_default_to_the_standard_report_metrics(tmp_path):
    assert spec_with(tmp_path).metrics == list(REPORT_METRICS)
    chosen = ["throughput", *SUB_PHASES]
    assert spec_with(tmp_path, f"metrics=[{','.join(chosen)}]").metrics == chosen


@pytest.mark.parametrize(("value", "key", "words"), [
    ("[throughput,physics]", "metrics[1]", "'physics' must be 'throughput' or a phase name ending in '_ms'"),
    ("[throughput,throughput]", "metrics", "must not repeat"),
    ("[]", "metrics", "at least one metric"),
])
def test_bad_metrics_name_their_key(tmp_path, value, key, words):
    with pytest.raises(SpecError) as err:
        spec_with(tmp_path, f"metrics={value}")
    assert err.value.key == key and words in str(err.value)


def write_runs(root, sweep_id: str) -> None:
    """Three ok runs per side that time ``update_state.command.compute_ms`` but not its post-compute."""
    for side, compute_ms in (("base", 2.0), ("cand", 1.0)):
        for i in range(3):
            runs_fixture.write_run(root, sweep_id, f"{side}{i}", side, GO2, throughput=100.0 + i,
                                   physics_ms=10.0, update_state_ms=3.0,
                                   **{"update_state.command.compute_ms": compute_ms + i / 10})


def test_report_rows_follow_the_sweeps_metrics_and_mark_unreported_ones(tmp_path):
    sweep_id = "sub-20260101T000000"
    runs_fixture.write_sweep(tmp_path, sweep_id, [{"metric": "physics_ms", "max_ratio": 1.1}], [GO2])
    record = read_record(tmp_path, sweep_id)
    record.spec.metrics = ["throughput", *SUB_PHASES]
    write_record(tmp_path, record)
    write_runs(tmp_path, sweep_id)

    report = make_report(tmp_path, sweep_id)
    assert report.metrics == ["throughput", *SUB_PHASES, "physics_ms"], "a gate's metric is appended"
    compute = {r.side: r for r in report.rows if r.metric == SUB_PHASES[0]}
    assert compute["cand"].ratio == pytest.approx(1.1 / 2.1)
    lines = {line.split(" | ")[0].lstrip("| "): line for line in report_markdown(report).splitlines()}
    assert lines[SUB_PHASES[1]].count("not reported") == 2, "both sides ran ok but never timed it"
    assert "update_state_ms" not in lines and "no ok runs" not in report_markdown(report)


def test_records_without_metrics_keep_the_standard_rows(tmp_path):
    sweep_id = "old-20260101T000000"
    runs_fixture.write_sweep(tmp_path, sweep_id, [], [GO2])
    write_runs(tmp_path, sweep_id)
    assert make_report(tmp_path, sweep_id).metrics == list(REPORT_METRICS)
