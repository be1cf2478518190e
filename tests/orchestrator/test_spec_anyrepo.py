"""The sweep keys for benchmarking any repository: free-form params and cases, placeholders,
protocol/json, audit_modules, prepare; and envruntime sweeps unchanged (their run keys included)."""

from __future__ import annotations

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from orchestrator.errors import SpecError
from orchestrator.plan.expand import ResolvedSweep, build_plan
from orchestrator.spec.load import revalidated, side_settings, spec_from_config
from orchestrator.spec.record import spec_from_json, spec_to_json

ROOT = Path(__file__).resolve().parents[2]
FOREIGN = {
    "name": "foreign",
    "sides": {"a": {"ref": "HEAD~1"}, "b": {"ref": "HEAD", "overrides": ["params.size=20"]}},
    "baseline": "a", "cases": ["sort small lists"], "params": {"size": 10, "label": "x", "fast": True},
    "command": ["{python}", "{sweep_dir}/bench.py", "--size", "{size}", "--label", "{label}", "{fast}",
                "--out", "{result}", "--in", "{worktree}", "{case}", "{{literal}}"],
    "protocol": "json", "json": {"throughput": "results.0.fps", "phases": {"sort_ms": "results.0.ms"},
                                 "metrics": {"peak_kib": "mem"}},
}


def spec(data: dict, *dotlist: str):
    return spec_from_config(OmegaConf.create(data), list(dotlist))


def test_a_foreign_command_takes_free_form_params_and_cases():
    loaded = spec(FOREIGN)
    assert loaded.params == {"size": 10, "label": "x", "fast": True}, "no envruntime defaults filled in"
    assert side_settings(loaded, "b").params == {"size": 20, "label": "x", "fast": True}
    assert loaded.metrics is None, "the report takes what the runs reported"
    again = revalidated(spec_from_json(spec_to_json(loaded)))
    assert again == loaded, "a recorded spec loads back as it was (resume)"


def test_envruntime_params_keys_and_names_stay_on_its_default_command():
    base = {"name": "e", "sides": {"a": {"ref": "HEAD"}}, "baseline": "a",
            "cases": ["sac/go2_joystick_flat/mujoco"]}
    with pytest.raises(SpecError, match="params.size: Key 'size' not in 'ParamsSpec'"):
        spec({**base, "params": {"size": 1}})
    with pytest.raises(SpecError, match="cases\\[0\\]: unknown task 'sorting'"):
        spec({**base, "cases": ["sac/sorting/mujoco"]})
    with pytest.raises(SpecError, match="is not a case of the form algo/task/sim"):
        spec({**base, "cases": ["wordcount"]})
    foreign = {**FOREIGN, "cases": ["sac/sorting/mujoco"]}
    assert spec(foreign).cases == ["sac/sorting/mujoco"], "known lists apply to a foreign command when set"
    with pytest.raises(SpecError, match="cases\\[0\\]: unknown algo 'sac'"):
        spec({**foreign, "known": {"algos": ["ppo"]}})


@pytest.mark.parametrize(("changes", "key", "words"), [
    ({"command": ["{python}", "b.py", "{algo}", "{result}"]}, "command[2]",
     "needs every case of the form algo/task/sim; cases[0] 'sort small lists' is not"),
    ({"command": ["{python}", "b.py", "{iters}", "{result}"]}, "command[2]", "no param provides it"),
    ({"params": {"python": 1}}, "params.python", "built-in placeholder"),
    ({"params": {"bad-name": 1}}, "params.bad-name", "letters, digits and '_'"),
    ({"params": {"size": 10, "label": "x", "fast": True, "nested": {"a": 1}}}, "params.nested",
     "a number, a string or a bool"),
    ({"prepare": [["uv", "sync", "{size}"]]}, "prepare[0][2]",
     "takes only {python}, {worktree}, {sweep_dir}"),
    ({"prepare": [[]]}, "prepare[0]", "non-empty argv"),
    ({"audit_modules": ["my-lib"]}, "audit_modules[0]", "is not a module name"),
    ({"json": {"throughput": "fps", "phases": {"sort": "x"}}}, "json.phases.sort", "must end in '_ms'"),
    ({"json": {"throughput": "fps", "metrics": {"status": "x"}}}, "json.metrics.status", "a run column"),
    ({"json": {"throughput": "a..b"}}, "json.throughput", "is not a dotted path"),
    ({"cases": [" padded"]}, "cases[0]", "is not a case name"),
    ({"metrics": ["throughput", "accuracy"]}, "metrics[1]",
     "'accuracy' is not reported by protocol json under this sweep's settings; valid: peak_kib, sort_ms, "
     "throughput"),
    ({"protocol": "time", "json": None, "params": {"size": 1, "label": "x", "fast": True, "measure": 0}},
     "params.measure", "must be an integer >= 1"),
])
def test_bad_foreign_keys_name_their_key(changes, key, words):
    with pytest.raises(SpecError) as info:
        spec({**FOREIGN, **changes})
    assert str(info.value).startswith(f"{key}: ") and words in str(info.value), str(info.value)


def test_a_declared_json_metric_may_be_a_report_row_and_a_gate_metric():
    loaded = spec({**FOREIGN, "metrics": ["throughput", "peak_kib"],
                   "gates": [{"metric": "peak_kib", "max_ratio": 1.1}]})
    assert loaded.metrics == ["throughput", "peak_kib"]


def test_envruntime_sweeps_keep_their_run_keys():
    """Pinned keys: free-form params give an envruntime spec the keys its typed params gave, and only a
    deliberate change may move them (the bench command joined the key, so resume refuses an edited
    command; every key moved once then)."""
    loaded = spec_from_config(OmegaConf.load(ROOT / "sweeps" / "smoke.yaml"),
                              ["repeats=1", "sides.direct.overrides=[variant=direct,params.num_envs=16]"])
    resolved = ResolvedSweep(spec=loaded, repo=Path("/r"), results_root=Path("/r/results"),
                             shas={label: "a" * 40 for label in loaded.sides},
                             settings={label: side_settings(loaded, label) for label in loaded.sides})
    keys = [(run.side, run.run_key) for run in build_plan(resolved, "smoke-20260101T000000")]
    assert keys == [("manager", "e4c088ad557c27e24d5c"), ("direct", "277c5e1d212b4daa4f2c")]
