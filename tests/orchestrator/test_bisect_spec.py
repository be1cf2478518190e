"""The sweep file of ``shasweep bisect``: one case, one gate; sides, baseline and a gate's side ignored."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from orchestrator.errors import SpecError
from orchestrator.spec.bisect_sweep import load_bisect_spec

SWEEPS = Path(__file__).resolve().parents[2] / "sweeps"


@pytest.mark.parametrize("name", ["bisect.yaml", "smoke.yaml"])
def test_the_shipped_sweeps_load_as_bisects(name):
    spec = load_bisect_spec(SWEEPS / name, [], "good-ref", "bad-ref")
    assert {label: side.ref for label, side in spec.sides.items()} == {"good": "good-ref", "cand": "bad-ref"}
    assert spec.baseline == "good" and len(spec.cases) == 1 and len(spec.gates) == 1


def write(tmp_path: Path, **keys: object) -> Path:
    sweep = {"name": "b", "cases": ["sac/go2_joystick_flat/mujoco"],
             "gates": [{"metric": "throughput", "min_ratio": 0.95}], **keys}
    path = tmp_path / "b.yaml"
    path.write_text(yaml.safe_dump(sweep))
    return path


def test_sides_baseline_and_gate_sides_are_ignored(tmp_path):
    path = write(tmp_path, sides={"x": {"ref": "main"}, "y": {"ref": "dev"}}, baseline="x",
                 gates=[{"metric": "throughput", "min_ratio": 0.9, "side": "y"}])
    spec = load_bisect_spec(path, ["repeats=7", "sides.z.ref=other"], "g", "b")
    assert list(spec.sides) == ["good", "cand"] and spec.gates[0].side is None
    assert spec.repeats == 7 and spec.gates[0].min_ratio == 0.9


@pytest.mark.parametrize(("keys", "message"), [
    ({"cases": ["sac/go2_joystick_flat/mujoco", "sac/g1_walk_flat/mujoco"]},
     "cases: a bisect takes exactly one case"),
    ({"gates": []}, "gates: a bisect takes exactly one gate"),
    ({"gates": [{"metric": "throughput", "min_ratio": 0.9}, {"metric": "physics_ms", "max_ratio": 1.1}]},
     "gates: a bisect takes exactly one gate"),
    ({"repeats": 0}, "repeats: must be > 0"),
])
def test_bad_bisect_sweeps_name_the_key(tmp_path, keys, message):
    with pytest.raises(SpecError, match=message):
        load_bisect_spec(write(tmp_path, **keys), [], "g", "b")
