"""``SweepRecord``: records written by today's shasweep and by its first release load through
``from_json`` (tests/data/records holds real ones, written by ``shasweep run`` of the fake bench) and
today's round-trip exactly; older ones get every default once."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from orchestrator.analysis.report_model import make_report
from orchestrator.errors import InvalidInputError
from orchestrator.plan.integrity import check_digest
from orchestrator.spec.deprecated import DEPRECATED_KEYS
from orchestrator.spec.load import load_spec
from orchestrator.spec.record import (
    AdaptiveSummary,
    RunOutcome,
    SweepRecord,
    Waiver,
    spec_from_json,
    spec_to_json,
)
from orchestrator.spec.results_format import FORMAT_VERSION, RECORD_KEY
from orchestrator.spec.schema import (
    DEFAULT_COMMAND,
    REPORT_METRICS,
    GateSpec,
    NoiseMode,
    Order,
    Protocol,
    SideSpec,
    Spending,
    SweepSpec,
)

RECORDS = Path(__file__).resolve().parents[1] / "data" / "records"
TODAY = sorted((RECORDS / "today").glob("*.json"))
(OLDEST,) = (RECORDS / "oldest" / "sweeps").glob("*.json")


def raw(path: Path) -> dict:
    return json.loads(path.read_text())


def default_spec():
    """A spec with every key at its default (the keys a file written before they existed lacks)."""
    return spec_from_json({"name": "defaults", "sides": {"a": {"ref": "HEAD"}}, "cases": ["c"]})


GATE_DEFAULTS = spec_to_json(spec_from_json({"name": "g", "gates": [{"metric": "x"}]}))["gates"][0]


def without_deprecated(record: dict) -> dict:
    return {**record, "spec": {k: v for k, v in record["spec"].items() if k not in DEPRECATED_KEYS}}


@pytest.mark.parametrize("path", TODAY, ids=lambda p: p.stem)
def test_todays_records_round_trip(path):
    written = raw(path)
    check_digest(written)  # the file is as shasweep wrote it
    record = SweepRecord.from_json(written)
    kept = without_deprecated(written)
    again = record.to_json()
    added = {k: v for k, v in again["spec"].items() if k not in kept["spec"]}
    assert added == {k: v for k, v in spec_to_json(default_spec()).items() if k in added}, \
        "spec keys added since the file was written take their defaults"
    gates = [{**GATE_DEFAULTS, **gate} for gate in kept["spec"].get("gates", [])]
    sides = {label: {**side, **{k: v for k, v in again["spec"]["sides"][label].items() if k not in side}}
             for label, side in kept["spec"]["sides"].items()}
    assert all(sides[label][k] == getattr(SideSpec(ref=""), k) for label in sides for k in sides[label]
               if k not in kept["spec"]["sides"][label]), "so do side keys"
    assert again == {RECORD_KEY: FORMAT_VERSION, **kept,
                     "spec": {**kept["spec"], **added, "gates": gates, "sides": sides}}, (
        "today's format, its version first, the deprecated keys dropped, gate and side keys added since "
        "at their defaults")
    assert list(again) == [RECORD_KEY, *written], "in the file's key order"
    assert SweepRecord.from_json(record.to_json()) == record


def test_a_record_from_before_the_spending_key_keeps_the_even_split_its_looks_were_decided_by():
    written = raw(RECORDS / "today" / "fake-ab-20261201T191540.json")
    record = SweepRecord.from_json(written)
    assert "spending" not in written["spec"] and record.spec.adaptive
    assert record.spec.spending is Spending.even, "a report or resume of it replays its decisions"
    assert SweepRecord.from_json(record.to_json()).spec.spending is Spending.even
    assert SweepSpec().spending is Spending.pocock, "a new sweep's default"


def test_a_record_loads_typed():
    record = SweepRecord.from_json(raw(RECORDS / "today" / "fake-ab-20261201T191540.json"))
    assert record.status == "finished" and record.planned_runs == 4 and len(record.outcomes) == 4
    assert all(isinstance(o, RunOutcome) and o.status == "ok" for o in record.outcomes)
    assert record.spec.gates == [GateSpec(metric="physics_ms", max_ratio=0.6),
                                 GateSpec(metric="throughput", min_ratio=0.9, case="sac/fake/none")]
    assert record.spec.order is Order.interleaved and record.spec.noise is NoiseMode.cell
    assert (record.spec.repeats, record.spec.max_rounds, record.spec.adaptive) == (2, 3, True)
    assert record.adaptive == AdaptiveSummary(repeats=2, max_repeats=3, rounds=2, ended="every gate decided")
    assert record.waivers == (Waiver("waive", "sac/fake/none", None, 0, "accepted for test", "tester",
                                     "2026-12-01T19:15:51+00:00"),)
    assert len(record.resumed) == 1 and record.side("old").sha.startswith("98ed7007")
    assert record.side("absent").sha is None


def test_the_oldest_record_gets_every_default_once(tmp_path):
    old = raw(OLDEST)
    assert "metrics" not in old["spec"] and "confidence" not in old["spec"]["gates"][0]
    record = SweepRecord.from_json(old)
    spec = record.spec
    assert spec.metrics == list(REPORT_METRICS), "records before the key reported these"
    assert spec.gates == [GateSpec(metric="physics_ms", max_ratio=0.6, confidence=0.95)]
    assert (spec.protocol, spec.noise, spec.hosts) == (Protocol.v1, NoiseMode.cell, "one")
    assert spec.pythonpath == ["."] and spec.command == old["spec"]["command"]
    assert (spec.max_rounds, spec.drift_threshold, spec.waivers) == (2, 0.03, [])
    assert [o.host_id for o in record.outcomes] == [None] * 4
    assert (record.client_token, record.digest, record.adaptive, record.waivers) == ("", None, None, ())
    root = tmp_path / "results"
    shutil.copytree(RECORDS / "oldest", root)
    report = make_report(root, record.sweep_id)
    assert report.exit_code == 0 and [g.verdict for g in report.gates] == ["PASS"]
    assert {r.metric for r in report.rows} == set(REPORT_METRICS)


def test_a_new_specs_json_is_what_records_held(tmp_path):
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump({
        "name": "s", "sides": {"a": {"ref": "HEAD"}, "b": {"ref": "HEAD", "overrides": ["params.seed=1"]}},
        "baseline": "a", "cases": ["sac/go2_joystick_flat/mujoco"], "order": "randomized",
        "gates": [{"metric": "throughput", "min_ratio": 0.9}], "hosts": ["h1", "h2"]}))
    spec = load_spec(path)
    from omegaconf import OmegaConf  # what shasweep wrote before the record was typed

    assert spec_to_json(spec) == OmegaConf.to_container(OmegaConf.structured(spec), enum_to_str=True)
    assert spec_to_json(spec)["command"] == list(DEFAULT_COMMAND)


@pytest.mark.parametrize("change, message", [
    (lambda r: r.pop("spec"), "spec: must be a mapping, got None"),
    (lambda r: r.update(planned_runs="many"), "planned_runs: Input should be a valid integer"),
    (lambda r: r["spec"]["gates"][0].update(max_ratio="low"), "spec.gates.0.max_ratio:"),
    (lambda r: r["spec"].update(order="sideways"), "spec.order:"),
    (lambda r: r.pop("sweep_id"), "sweep_id: missing"),
])
def test_a_record_of_an_unexpected_shape_names_the_key(change, message):
    record = raw(TODAY[0])
    change(record)
    with pytest.raises(InvalidInputError, match=message.replace(".", r"\.")):
        SweepRecord.from_json(record)
    with pytest.raises(InvalidInputError, match="a sweep record is a JSON object"):
        SweepRecord.from_json([record])


def test_malformed_log_entries_are_skipped_and_unset_logs_not_written():
    record = raw(TODAY[0])
    record["waivers"] = [*record["waivers"], {"action": "waive"}, "text", {"action": "x", "case": "c"}]
    record["outcomes"] = [*record["outcomes"], "text", {"status": "ok"}]
    loaded = SweepRecord.from_json(record)
    assert len(loaded.waivers) == 1 and len(loaded.outcomes) == 4
    plain = SweepRecord.from_json({**record, "waivers": [], "resumed": [], "adaptive": None}).to_json()
    assert not {"waivers", "resumed", "adaptive"} & set(plain), "written only once they happened"
