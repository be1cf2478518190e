"""Sweep spec loading, overrides and validation: every error is exit code 2 and names its key."""

from __future__ import annotations

import pytest
import yaml
from fakebench.fakerepo import make_fake_repo

from orchestrator.cli.main import main
from orchestrator.errors import EXIT_INVALID
from orchestrator.spec.load import load_spec, side_settings
from orchestrator.spec.schema import DEFAULT_COMMAND, Order

BASE = {
    "name": "ab",
    "sides": {"base": {"ref": "HEAD~1"}, "cand": {"ref": "HEAD", "overrides": ["variant=direct"]}},
    "baseline": "base",
    "cases": ["sac/go2_joystick_flat/mujoco"],
    "params": {"num_envs": 16, "warmup": 1, "measure": 2},
    "gates": [{"metric": "throughput", "min_ratio": 0.9}],
}


@pytest.fixture
def repo(tmp_path, monkeypatch):
    fake = make_fake_repo(tmp_path)
    monkeypatch.chdir(fake.path)
    return fake


def write_yaml(tmp_path, data: dict | str, name: str = "sweep.yaml"):
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data))
    return path


DELETE = object()


def changed(**changes) -> dict:
    """BASE with ``a__b=value`` set (or deleted with DELETE)."""
    data = yaml.safe_load(yaml.safe_dump(BASE))
    for dotted, value in changes.items():
        *parents, leaf = dotted.split("__")
        node = data
        for key in parents:
            node = node[key]
        if value is DELETE:
            del node[leaf]
        else:
            node[leaf] = value
    return data


def test_defaults_and_types(tmp_path):
    spec = load_spec(write_yaml(tmp_path, BASE))
    assert spec.variant == "manager" and spec.repeats == 3 and spec.order is Order.interleaved
    assert spec.params == {"num_envs": 16, "warmup": 1, "measure": 2, "replay_capacity": 64, "seed": 0,
                           "threads": 0}, "envruntime's command gets its params defaults"
    assert spec.command == list(DEFAULT_COMMAND) and spec.results == "results" and spec.repo is None
    assert spec.timeout_s == 600.0 and spec.continue_on_error is False
    assert spec.gates[0].min_ratio == 0.9 and spec.gates[0].max_ratio is None


def test_actions_and_device_reach_the_bench_only_when_set(tmp_path):
    from orchestrator.spec.commands import bench_argv

    unset = load_spec(write_yaml(tmp_path, BASE))
    assert "actions" not in unset.params and "device" not in unset.params, "unset: no new run-key input"
    assert bench_argv(unset.command, unset.params) == DEFAULT_COMMAND
    spec = load_spec(write_yaml(tmp_path, BASE), ["+params.actions=pregenerated", "+params.device=cuda"])
    assert (spec.params["actions"], spec.params["device"]) == ("pregenerated", "cuda")
    argv = bench_argv(spec.command, spec.params)
    assert argv[-4:] == ("--device", "{device}", "--stream", "{stream}")
    assert argv[-6:-4] == ("--actions", "{actions}") and argv[:-6] == DEFAULT_COMMAND[:-2]
    other = ["bench", "--stream", "{stream}"]
    assert bench_argv(other, {"actions": "x"}) == tuple(other), "another repository's command as written"


def test_dotlist_overrides_win_over_the_yaml(tmp_path):
    spec = load_spec(write_yaml(tmp_path, BASE), ["params.num_envs=64", "repeats=1", "order=randomized",
                                                  "sides.cand.ref=main", "+env.OMP_PROC_BIND=close"])
    assert (spec.params["num_envs"], spec.repeats, spec.order) == (64, 1, Order.randomized)
    assert spec.sides["cand"].ref == "main" and spec.env == {"OMP_PROC_BIND": "close"}


def test_a_plus_override_adds_a_key(tmp_path):
    spec = load_spec(write_yaml(tmp_path, BASE), ["+sides.new.ref=main", "sides.base.ref=v1"])
    assert list(spec.sides) == ["base", "cand", "new"] and spec.sides["new"].ref == "main"
    assert spec.sides["base"].ref == "v1"


@pytest.mark.parametrize("ref", ["5e51197", "0123456", "1234567", "1_000", "'quoted'", "it's"])
def test_a_ref_override_is_the_text_as_written_even_where_yaml_reads_a_number(tmp_path, ref):
    spec = load_spec(write_yaml(tmp_path, BASE), [f"sides.base.ref={ref}", f"+sides.new.ref={ref}"])
    assert spec.sides["base"].ref == spec.sides["new"].ref == ref.strip("'"), "a short SHA is not 'inf'"


def test_a_tilde_override_drops_a_key(tmp_path):
    three = load_spec(write_yaml(tmp_path, BASE), ["+sides.extra.ref=main"])
    assert list(three.sides) == ["base", "cand", "extra"]
    data = changed(sides__extra={"ref": "main"}, env={"A": "1", "B": "2"})
    spec = load_spec(write_yaml(tmp_path, data), ["~sides.extra", "~env.B", "repeats=2"])
    assert list(spec.sides) == ["base", "cand"] and spec.env == {"A": "1"} and spec.repeats == 2
    assert load_spec(write_yaml(tmp_path, BASE), ["~gates"]).gates == [], "a key back to its default"


def test_side_overrides_change_only_that_side(tmp_path):
    data = changed(sides__base__overrides=["params.num_envs=32", "env.A=1"])
    spec = load_spec(write_yaml(tmp_path, data))
    base, cand = side_settings(spec, "base"), side_settings(spec, "cand")
    assert (base.variant, base.params["num_envs"], base.env) == ("manager", 32, {"A": "1"})
    assert (cand.variant, cand.params["num_envs"], cand.env) == ("direct", 16, {})


def test_known_name_lists_are_configurable(tmp_path):
    data = changed(cases=["ppo/my_task/my_sim"], known={"algos": [], "tasks": [], "sims": []})
    assert load_spec(write_yaml(tmp_path, data)).cases == ["ppo/my_task/my_sim"]


INVALID = [
    # (id, yaml data or text, overrides, text the error must contain)
    ("yaml-syntax", "name: [unclosed\nsides: {}\n", [], "invalid YAML"),
    ("not-a-mapping", "- a\n- b\n", [], "must be a YAML mapping"),
    ("unknown-key", changed(sidez={}), [], "sidez: Key 'sidez' not in 'SweepSpec'"),
    ("unknown-nested-key", changed(params__num_env=3), [], "params.num_env"),
    ("wrong-type", changed(params__num_envs="many"), [], "params.num_envs: Value 'many'"),
    ("missing-name", changed(name=DELETE), [], "name: "),
    ("bad-name", changed(name="a/b"), [], "name: 'a/b'"),
    ("empty-sides", changed(sides={}), [], "sides: at least one side"),
    ("side-without-ref", changed(sides__base={"overrides": []}), [], "sides.base.ref"),
    ("unknown-baseline", changed(baseline="zz"), [], "baseline: 'zz' is not a side"),
    ("no-cases", changed(cases=[]), [], "cases: at least one case"),
    ("malformed-case", changed(cases=["sac/go2"]), [], "cases[0]: 'sac/go2' is not a case"),
    ("unknown-sim", changed(cases=["sac/go2_joystick_flat/bullet"]), [], "cases[0]: unknown sim 'bullet'"),
    ("duplicate-case", changed(cases=["sac/g1_walk_flat/mujoco"] * 2), [], "cases: cases must not repeat"),
    ("zero-envs", BASE, ["params.num_envs=0"], "params.num_envs: must be > 0, got 0"),
    ("negative-warmup", BASE, ["params.warmup=-1"], "params.warmup: must be >= 0"),
    ("bad-actions", BASE, ["+params.actions=random"],
     "params.actions: unknown actions 'random'; valid: actor, pregenerated"),
    ("bad-device", BASE, ["+params.device=tpu"], "params.device: unknown device 'tpu'; valid: cpu, cuda"),
    ("zero-repeats", BASE, ["repeats=0"], "repeats: must be > 0"),
    ("zero-timeout", BASE, ["timeout_s=0"], "timeout_s: must be > 0"),
    ("bad-order", BASE, ["order=shuffled"], "order: Invalid value 'shuffled'"),
    ("unknown-variant", BASE, ["variant=fused"], "variant: unknown variant 'fused'"),
    ("bad-env-name", BASE, ["+env.1X=2"], "env.1X: '1X' is not a valid"),
    ("unknown-placeholder", changed(command=["{python}", "{nope}"]), [],
     "command[1]: unknown placeholder {nope}"),
    ("empty-command", changed(command=[]), [], "command: must be a non-empty argv list"),
    ("gate-type", changed(gates=[{"metric": "throughput", "min_ratio": "x"}]), [], "gates[0].min_ratio"),
    ("gate-unknown-key", changed(gates=[{"metric": "throughput", "min": 1}]), [],
     "gates[0].min: Key 'min'"),
    ("gate-no-bound", changed(gates=[{"metric": "throughput"}]), [], "gates[0]: needs min_ratio"),
    ("gate-metric", changed(gates=[{"metric": "speed", "min_ratio": 1}]), [], "gates[0].metric"),
    ("gate-side", changed(gates=[{"metric": "physics_ms", "max_ratio": 1, "side": "x"}]), [],
     "gates[0].side: 'x' is not a side"),
    ("gate-case", changed(gates=[{"metric": "physics_ms", "max_ratio": 1, "case": "a/b/c"}]), [],
     "gates[0].case"),
    ("side-override-key", changed(sides__cand__overrides=["repeats=2"]), [],
     "sides.cand.overrides: repeats: Key 'repeats' not in 'RunSettings'"),
    ("side-override-value", changed(sides__cand__overrides=["params.measure=0"]), [],
     "sides.cand.overrides: params.measure: must be > 0"),
    ("side-override-syntax", changed(sides__cand__overrides=["variant"]), [],
     "sides.cand.overrides[0]: 'variant' is not of the form key=value"),
    ("override-syntax", BASE, ["repeats"], "override[0]: 'repeats' is not of the form key=value"),
    ("override-unknown-key", BASE, ["params.nope=1"], "params.nope"),
    ("override-typo-side", BASE, ["sides.manger.ref=HEAD~1"],
     "override[0]: 'sides.manger.ref' is not in the sweep; to add it, write +sides.manger.ref=HEAD~1 "
     "(sides has: base, cand)"),
    ("override-remove-absent", BASE, ["~sides.extra"],
     "override[0]: 'sides.extra' is not in the sweep file, so ~sides.extra removes nothing (sides has: base, "
     "cand)"),
    ("override-remove-default", BASE, ["repeats=2", "~order"],
     "override[1]: 'order' is not in the sweep file"),
    ("override-remove-value", BASE, ["~repeats=2"], "override[0]: '~repeats=2': ~KEY removes a key and takes "
     "no value"),
    ("override-remove-list-item", BASE, ["~cases[0]"], "a list item cannot be removed"),
    ("override-remove-baseline", BASE, ["~sides.base"], "baseline"),
    ("override-add-existing", BASE, ["+repeats=2"],
     "override[0]: 'repeats' is already in the sweep; change it with repeats=2 (no '+')"),
    ("override-add-existing-side", BASE, ["+sides.cand.ref=main"],
     "'sides.cand.ref' is already in the sweep"),
    ("override-plus-only", BASE, ["+=1"], "override[0]: '+=1' is not of the form key=value or +key=value"),
    ("unresolvable-ref", BASE, ["sides.cand.ref=nope"], "sides.cand.ref: 'nope' is not a commit in"),
    ("numeric-ref", changed(sides__cand__ref=float("inf")), [],
     "sides.cand.ref: YAML read this ref as the number inf; write it in quotes"),
    ("not-a-repo", BASE, ["repo=/"], "repo: '/' is not a git repository"),
]


@pytest.mark.parametrize("data, overrides, expected", [c[1:] for c in INVALID], ids=[c[0] for c in INVALID])
def test_invalid_input_exits_2_naming_the_key(repo, tmp_path, capsys, data, overrides, expected):
    path = write_yaml(tmp_path, data)
    assert main(["plan", str(path), *overrides]) == EXIT_INVALID
    err = capsys.readouterr().err
    assert err.startswith("shasweep: error: ") and expected in err, err


def test_missing_file_and_unwritable_results(repo, tmp_path, capsys):
    assert main(["plan", str(tmp_path / "absent.yaml")]) == EXIT_INVALID
    assert "does not exist" in capsys.readouterr().err
    blocker = tmp_path / "file"
    blocker.write_text("")
    path = write_yaml(tmp_path, BASE)
    assert main(["plan", str(path), f"results={blocker}/sub"]) == EXIT_INVALID
    assert "results: cannot write to" in capsys.readouterr().err


def test_valid_sweep_plans_with_exit_0(repo, tmp_path, capsys):
    assert main(["plan", str(write_yaml(tmp_path, BASE)), "repeats=2"]) == 0
    out = capsys.readouterr().out
    assert f"side base (baseline): HEAD~1 = {repo.shas[0]}" in out
    assert f"side cand: HEAD = {repo.shas[1]}, variant direct" in out
    assert "4 runs" in out


def test_bootstrap_keys_are_accepted_with_a_note_and_ignored(repo, tmp_path, capsys):
    """Deprecated keys (unused since verdicts read t-intervals): one stderr note per key, nothing checked
    or kept, the plan as without them."""
    data = changed(bootstrap_resamples=10**9, bootstrap_seed=-1)
    assert main(["plan", str(write_yaml(tmp_path, data)), "bootstrap_seed=3", "repeats=2"]) == 0
    captured = capsys.readouterr()
    notes = captured.err.splitlines()
    assert len(notes) == 2 and all(n.startswith("shasweep: note: bootstrap_") for n in notes), notes
    assert "bootstrap_resamples is deprecated and ignored" in notes[0] and "bootstrap_seed" in notes[1]
    assert main(["plan", str(write_yaml(tmp_path, BASE)), "repeats=2"]) == 0
    plain = capsys.readouterr()
    sides = [[line for line in text.splitlines() if line.startswith("side ")]
             for text in (plain.out, captured.out)]
    assert plain.err == "" and sides[0] == sides[1] and len(sides[0]) == 2
    spec = load_spec(write_yaml(tmp_path, data))
    assert not hasattr(spec, "bootstrap_resamples") and not hasattr(spec, "bootstrap_seed")
