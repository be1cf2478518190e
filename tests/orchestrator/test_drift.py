"""Drift of a side against earlier sweeps of the same SHA, case, params and host (hand-made results)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
import yaml
from test_report import GO2, write_run, write_sweep

from orchestrator.analysis import drift
from orchestrator.analysis.report_model import make_report
from orchestrator.errors import SpecError
from orchestrator.render.markdown import report_markdown, to_frame
from orchestrator.spec.load import load_spec

T0 = datetime(2026, 1, 1, tzinfo=UTC)
CURRENT = "ab-20260103T000000"


def write_runs(root, sweep_id: str, day: int, base: list[float], cand: list[float], host: str = "bench1",
               params: str = "{}", **columns) -> None:
    """One recorded sweep's runs, started on ``day``; the same SHAs (test_report.SHAS) in every sweep."""
    write_sweep(root, sweep_id, [], [GO2])
    for side, values in (("base", base), ("cand", cand)):
        for i, value in enumerate(values):
            write_run(root, sweep_id, f"{sweep_id}-{side}{i}", side, GO2, throughput=value, physics_ms=10.0,
                      repeat=i, host_hostname=host, params=params,
                      started_at=T0 + timedelta(days=day, minutes=i), **columns)


def drift_of(report, side: str, metric: str = "throughput"):
    (found,) = [d for d in report.drift if d.side == side and d.metric == metric]
    return found


@pytest.fixture
def root(tmp_path):
    """Two earlier sweeps (base ~100, cand ~200) and the current one, whose base dropped 10 %."""
    write_runs(tmp_path, "ab-20260101T000000", 1, [100.0, 101.0, 99.0], [200.0, 199.0, 201.0])
    write_runs(tmp_path, "ab-20260102T000000", 2, [102.0, 103.0, 101.0], [202.0, 201.0, 203.0])
    write_runs(tmp_path, CURRENT, 3, [91.0, 92.0, 90.0], [201.0, 200.0, 202.0])
    return tmp_path


def test_a_side_that_moved_outside_the_noise_and_past_the_threshold_is_flagged(root):
    report = make_report(root, CURRENT)
    base, cand = drift_of(report, "base"), drift_of(report, "cand")
    assert (base.current, base.sweeps, base.latest) == (91.0, 2, 102.0)
    assert base.latest_sweep == "ab-20260102T000000"
    assert base.reference == pytest.approx(101.0), "median of the earlier sweeps' medians (100, 102)"
    assert base.change == pytest.approx(91 / 101 - 1) and base.flagged and base.interval.high < 1
    assert cand.reference == pytest.approx(201.0) and cand.change == pytest.approx(0.0) and not cand.flagged
    assert cand.interval.low < 1 < cand.interval.high
    assert not drift_of(report, "base", "physics_ms").flagged
    md = report_markdown(report)
    assert "## Drift" in md and "excludes no change, and it is at least 3% (drift_threshold)" in md
    assert ("| base | throughput | 91 | 101 | ab-20260102T000000: 102 | 2 | -9.9% | [-17.4%, -1.7%] "
            "| DRIFT |") in md
    assert "| cand | throughput | 201 | 201 | ab-20260102T000000: 202 | 2 | +0.0% | [-4.3%, +4.5%] | ok |" \
        in md


def test_threshold_comes_from_the_sweep_and_drift_reaches_the_csv(root):
    path = root / "sweeps" / f"{CURRENT}.json"
    record = json.loads(path.read_text())
    record["spec"]["drift_threshold"] = 0.15
    path.write_text(json.dumps(record))
    report = make_report(root, CURRENT)
    assert not drift_of(report, "base").flagged, "-9.9% is within 15%"
    frame = to_frame(report).set_index(["side", "metric"])
    assert frame.loc[("base", "throughput"), "history_sweeps"] == 2
    assert frame.loc[("base", "throughput"), "history_median"] == pytest.approx(101.0)
    assert not frame.loc[("base", "throughput"), "drifted"]


def test_history_must_match_host_and_params_and_be_earlier(tmp_path):
    write_runs(tmp_path, "ab-20260101T000000", 1, [100.0, 100.0], [200.0, 200.0], host="other-host")
    write_runs(tmp_path, "ab-20260102T000000", 2, [100.0, 100.0], [200.0, 200.0], params='{"num_envs": 8}')
    write_runs(tmp_path, "ab-20260109T000000", 9, [100.0, 100.0], [200.0, 200.0])  # a later sweep
    write_runs(tmp_path, CURRENT, 3, [50.0, 50.0], [100.0, 100.0])
    report = make_report(tmp_path, CURRENT)
    assert report.drift == [] and "## Drift" not in report_markdown(report)


def test_a_changed_bench_command_is_no_history(tmp_path):
    """Same SHA, params and host but another bench command: no false DRIFT; the same command drifts."""
    old, new = json.dumps(["{python}", "bench.py", "--fast"]), json.dumps(["{python}", "bench.py"])
    write_runs(tmp_path, "ab-20260101T000000", 1, [100.0, 100.0], [200.0, 200.0], command=old)
    write_runs(tmp_path, CURRENT, 3, [50.0, 50.0], [100.0, 100.0], command=new)
    assert make_report(tmp_path, CURRENT).drift == []
    write_runs(tmp_path, "ab-20260102T000000", 2, [100.0, 100.0], [200.0, 200.0], command=new)
    report = make_report(tmp_path, CURRENT)
    assert drift_of(report, "base").flagged and drift_of(report, "base").sweeps == 1


def test_unrecorded_sweeps_and_failed_runs_are_no_history(tmp_path):
    write_run(tmp_path, "norecord-20260101T000000", "x", "base", GO2, throughput=1.0, host_hostname="bench1",
              started_at=T0)
    write_sweep(tmp_path, "ab-20260101T000000", [], [GO2])
    write_run(tmp_path, "ab-20260101T000000", "old", "base", GO2, status="failed", throughput=1.0,
              host_hostname="bench1", started_at=T0)
    write_runs(tmp_path, CURRENT, 3, [100.0], [200.0])
    assert make_report(tmp_path, CURRENT).drift == []


def test_drift_threshold_must_be_positive(tmp_path):
    sweep = {"name": "x", "sides": {"a": {"ref": "HEAD"}}, "baseline": "a", "cases": [GO2]}
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(sweep))
    assert load_spec(path).drift_threshold == 0.03
    with pytest.raises(SpecError, match="drift_threshold: must be > 0, got 0"):
        load_spec(path, ["drift_threshold=0"])


def test_only_the_latest_earlier_sweeps_are_read(root, monkeypatch):
    monkeypatch.setattr(drift, "HISTORY_SWEEPS", 1)
    base = drift_of(make_report(root, CURRENT), "base")
    assert (base.sweeps, base.reference, base.latest_sweep) == (1, 102.0, "ab-20260102T000000")


def test_the_html_report_shows_the_drift_highlighted(root):
    from orchestrator.session.recorded import SweepRun
    from orchestrator.session.reports import write_sweep_html

    page = write_sweep_html(SweepRun(CURRENT, root), make_report(root, CURRENT)).read_text(encoding="utf-8")
    assert "Drift against earlier sweeps of the same SHAs" in page
    assert '<td class="warn">DRIFT</td>' in page


def write_versioned(root, sweep_id: str, day: int, base: list[float], versions: dict | None) -> None:
    """A sweep whose base side's bench reported ``versions`` in its header audit (None: no versions)."""
    write_sweep(root, sweep_id, [], [GO2])
    audit = {} if versions is None else {"audit_versions": json.dumps(versions)}
    for i, value in enumerate(base):
        write_run(root, sweep_id, f"{sweep_id}-base{i}", "base", GO2, throughput=value, repeat=i,
                  host_hostname="bench1", started_at=T0 + timedelta(days=day, minutes=i), **audit)


def test_a_drift_names_the_packages_the_earlier_sweeps_ran_at_other_versions(tmp_path):
    write_versioned(tmp_path, "ab-20260101T000000", 1, [100.0, 100.0], {"rt": "0.3.1", "numpy": "2.1"})
    write_versioned(tmp_path, "ab-20260102T000000", 2, [100.0, 100.0], {"rt": "0.3.1", "numpy": "2.1"})
    write_versioned(tmp_path, CURRENT, 3, [92.0, 92.0], {"rt": "0.4.0", "numpy": "2.1", "new": "1"})
    base = drift_of(make_report(tmp_path, CURRENT), "base")
    assert base.flagged and base.software == ("new absent -> 1", "rt 0.3.1 -> 0.4.0")
    md = report_markdown(make_report(tmp_path, CURRENT))
    assert "| -8.0% | [-8.0%, -8.0%] | DRIFT | new absent -> 1; rt 0.3.1 -> 0.4.0 |" in md


def test_a_bench_that_reports_no_versions_names_no_change(tmp_path):
    write_versioned(tmp_path, "ab-20260101T000000", 1, [100.0, 100.0], None)
    write_versioned(tmp_path, CURRENT, 3, [92.0, 92.0], {"rt": "0.4.0"})
    base = drift_of(make_report(tmp_path, CURRENT), "base")
    assert base.flagged and base.software == ()
    assert "| -8.0% | [-8.0%, -8.0%] | DRIFT | same |" in report_markdown(make_report(tmp_path, CURRENT))
