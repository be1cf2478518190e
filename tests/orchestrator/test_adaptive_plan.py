"""Planning an adaptive sweep: the first rounds, the rounds it may add, and what ``plan`` prints."""

from __future__ import annotations

import platform
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from fakebench.fakerepo import make_fake_repo

from orchestrator.analysis import power
from orchestrator.analysis.noise_history import earlier_noise
from orchestrator.analysis.plan_power import planned_mde, round_sd
from orchestrator.analysis.sequential import Looks, rounds_to_decide
from orchestrator.analysis.verdicts import Verdict
from orchestrator.cli.main import main
from orchestrator.plan.expand import adaptive_plan, build_plan, resolve_sweep
from orchestrator.spec.load import load_spec
from orchestrator.spec.schema import GateSpec, Spending

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
sys.path.insert(0, str(EXAMPLES))
GO2 = "sac/go2_joystick_flat/mujoco"
GATE = GateSpec(metric="throughput", min_ratio=0.97)
SWEEP = {"name": "ad", "sides": {"a": {"ref": "HEAD~1"}, "b": {"ref": "HEAD"}}, "baseline": "a",
         "cases": ["sac/go2_joystick_flat/mujoco", "sac/g1_walk_flat/mujoco"], "repeats": 2,
         "gates": [{"metric": "throughput", "min_ratio": 0.97}]}


@pytest.fixture
def sweep_file(tmp_path, monkeypatch):
    repo = make_fake_repo(tmp_path)
    monkeypatch.chdir(repo.path)
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(SWEEP))
    return path


@pytest.mark.parametrize("order", ["interleaved", "randomized", "serial"])
def test_the_added_rounds_extend_the_design_round_by_round(sweep_file, order):
    resolved = resolve_sweep(load_spec(sweep_file, [f"order={order}", "max_repeats=5"]), Path.cwd())
    first, extra = build_plan(resolved, "ad-1"), adaptive_plan(resolved, "ad-1")
    assert resolved.spec.max_rounds == 5 and len(first) == 2 * 2 * 2 and len(extra) == 2 * 2 * 3
    assert [r.repeat for r in extra] == sorted(r.repeat for r in extra), "round by round"
    assert [r.order for r in first + extra] == list(range(len(first) + len(extra)))
    keys = {r.run_key for r in first + extra}
    assert len(keys) == len(first) + len(extra)
    again = adaptive_plan(resolve_sweep(load_spec(sweep_file, [f"order={order}", "max_repeats=5"]),
                                        Path.cwd()), "ad-1")
    assert [r.run_key for r in again] == [r.run_key for r in extra], "deterministic: resume finds them"
    fixed = resolve_sweep(load_spec(sweep_file, [f"order={order}"]), Path.cwd())
    assert [r.run_key for r in build_plan(fixed, "ad-1")] == [r.run_key for r in first]
    assert adaptive_plan(fixed, "ad-1") == [] and fixed.spec.max_rounds == 2


def test_plan_prints_min_and_max_runs(sweep_file, capsys):
    assert main(["plan", str(sweep_file), "max_repeats=10", "budget_s=600"]) == 0
    out = capsys.readouterr().out
    assert "adaptive: min 8 runs, max 40 runs" in out and "max_repeats=10" in out and "budget_s=600" in out
    assert "looks share each gate's error rate by spending=pocock" in out
    assert main(["plan", str(sweep_file)]) == 0
    assert "adaptive:" not in capsys.readouterr().out, "a fixed sweep by default"


def test_plan_estimates_rounds_from_earlier_sweeps_on_this_host(sweep_file, capsys):
    rng = np.random.default_rng(0)
    root = Path.cwd() / "results" / "runs"
    for sweep in ("old-1", "old-2"):
        (root / f"sweep={sweep}").mkdir(parents=True)
        for side in ("a", "b"):
            for r in range(5):
                key = f"{sweep}{side}{r}"
                throughput = float(1000 * np.exp(rng.normal(0, 0.02)))
                row = {"sweep_id": sweep, "run_key": key, "case": GO2, "side": side, "status": "ok",
                       "host_hostname": platform.node(), "throughput": throughput}
                pq.write_table(pa.Table.from_pylist([row]), root / f"sweep={sweep}" / f"{key}.parquet")
    other = {"sweep_id": "x", "run_key": "x", "case": GO2, "side": "a", "status": "ok",
             "host_hostname": "another-host", "throughput": 1.0}
    (root / "sweep=x").mkdir()
    pq.write_table(pa.Table.from_pylist([other]), root / "sweep=x" / "x.parquet")
    found = earlier_noise(Path.cwd() / "results", [GO2], "throughput", platform.node())[GO2]
    assert found.sweeps == 2 and found.runs == 4 and 0.01 < found.cv < 0.03, "the other host is left out"
    assert main(["plan", str(sweep_file), "max_repeats=20"]) == 0
    out = capsys.readouterr().out
    late = Looks(2, 20).confidence_at(20, 0.95)
    assert 1 - late > 0.05 / 20, "the last look of the default boundary reads more than an even share"
    mde = planned_mde(found.cv, 20, late, paired=True)
    assert (f"gate 0 (throughput >= 0.97x) {GO2}: run CV {100 * found.cv:.1f}% on {platform.node()} "
            f"(2 earlier sweeps): up to 20 rounds detect a change of {100 * mde:.1f}% (MDE, 80% power)"
            ) in out
    assert (f"gate 0 (throughput >= 0.97x) sac/g1_walk_flat/mujoco: no earlier ok runs on {platform.node()}"
            in out), "a case without history says so"
    assert ("warning:" in out) == (np.log1p(mde) > -np.log(0.97))
    assert main(["plan", str(sweep_file)]) == 0  # 2 fixed rounds: far too few for a 3 % bound
    out = capsys.readouterr().out
    expected = rounds_to_decide(round_sd(found.cv), -np.log(0.97), Looks(2, 2), 0.05, paired=True)
    assert (f"warning: gate 0 (throughput >= 0.97x) {GO2}: the MDE "
            f"{100 * planned_mde(found.cv, 2, 0.95, paired=True):.1f}% is larger than the bound 0.97's "
            f"distance from 1.0 (3.0%): at 2 rounds an unchanged side will likely be INCONCLUSIVE; "
            f"~{expected} rounds would clear it") in out


def _suite_rows(root: Path, protocol: str, cases: dict[str, float], sweeps: int, suite: bool = True) -> None:
    """``sweeps`` earlier sweeps of a suite of ``protocol`` through the real writer: per sweep, side and
    round one suite run whose cases are ``cases`` (name -> run CV), or plain runs when not ``suite``."""
    from dataclasses import replace as changed

    from test_results import outcome, planned

    from orchestrator.capabilities import SUITE_CASE, suite_case_key
    from orchestrator.store.parquet import write_run

    rng = np.random.default_rng(len(protocol) + sweeps)
    for s in range(sweeps):
        sweep = f"{protocol}-{s}-{suite}"
        for side in ("old", "new"):
            for r in range(4):
                suite_key = f"{sweep}-{side}-{r}"
                for case, cv in cases.items():
                    key = suite_case_key(suite_key, case) if suite else suite_key + case
                    run = changed(planned(root, key, sweep), case=case, side=side, protocol=protocol,
                                  algo=None, task=None, sim=None)
                    time_ms = float(np.exp(rng.normal(0, np.sqrt(np.log1p(cv ** 2)))))
                    result = changed(outcome(), summary={"throughput": 1000 / time_ms,
                                                         "phase_means_ms": {"time_ms": time_ms}},
                                     suite_run_key=suite_key if suite else None)
                    write_run(run, result)
    assert SUITE_CASE not in cases


def test_plan_reads_a_suites_history_per_case(tmp_path, capsys):
    """A suite sweep names its cases by glob or ``discover``: ``plan`` finds each benchmark its earlier
    runs of the same tool read, and estimates that case's noise from them alone (a pytest-benchmark
    suite's case of the same name, or a plain run, is another bench)."""
    from make_suite_repo import make_suite_repo

    repo = tmp_path / "repo"
    make_suite_repo(repo)
    _suite_rows(tmp_path, "pyperf", {"checksum": 0.01, "tokenize": 0.08}, sweeps=2)
    _suite_rows(tmp_path, "pytest-benchmark", {"checksum": 0.5}, sweeps=1)
    _suite_rows(tmp_path, "pyperf", {"checksum": 0.5}, sweeps=1, suite=False)
    root = tmp_path / "results"
    sweep = str(EXAMPLES / "pyperf" / "sweep.yaml")
    assert main(["plan", sweep, f"repo={repo}", f"results={root}"]) == 0
    out = capsys.readouterr().out
    assert "no earlier ok runs" not in out, out
    found = earlier_noise(root, ["*"], "time_ms", platform.node(), suite_protocol="pyperf")
    assert set(found) == {"checksum", "tokenize"}
    assert found["checksum"].sweeps == 2 and found["checksum"].runs == 4, "the other tool's runs left out"
    assert 0.005 < found["checksum"].cv < 0.02 and 0.04 < found["tokenize"].cv < 0.16
    for case in ("checksum", "tokenize"):
        assert (f"gate 0 (time_ms <= 1.15x) {case}: run CV {100 * found[case].cv:.1f}% on {platform.node()} "
                "(2 earlier sweeps)") in out, out
    glob = ('gates=[{metric: time_ms, max_ratio: 1.15, case: "tok*"}, '
            '{metric: time_ms, max_ratio: 1.15, case: "x*"}]')
    assert main(["plan", sweep, f"repo={repo}", f"results={root}", glob]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("gate ")]
    assert [line.split(":")[0] for line in lines] == ["gate 0 (time_ms <= 1.15x) tokenize",
                                                      "gate 1 (time_ms <= 1.15x) x*"], lines
    assert "no earlier ok runs" in lines[1]


def test_plan_on_a_root_without_runs_says_the_mde_comes_with_the_report(sweep_file, capsys):
    assert main(["plan", str(sweep_file)]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("gate 0")]
    assert len(lines) == 2 and all("no earlier ok runs" in line for line in lines)


@pytest.mark.parametrize("paired", [True, False])
def test_the_planned_mde_is_the_change_decided_with_80_percent_power(paired):
    """At a bound exactly the planned MDE away, an unchanged side PASSes in about 80 % of sweeps."""
    cv, rounds = 0.03, 6
    bound = 1 / (1 + planned_mde(cv, rounds, 0.95, paired))
    cand, base = power.simulate(np.random.default_rng(11), 4000, rounds, cv=cv, true_ratio=1.0, paired=paired)
    decided = power.decide(cand, base, Looks(rounds, rounds), GateSpec(metric="throughput", min_ratio=bound),
                           paired=paired)
    assert 0.75 <= decided.rate(Verdict.PASS) <= 0.85


def test_rounds_to_decide_grow_with_noise_and_shrink_with_distance():
    fixed = Looks(2, 2)
    rounds = [rounds_to_decide(round_sd(cv), -np.log(bound), fixed, 0.05, paired=True)
              for cv, bound in ((0.01, 0.97), (0.03, 0.97), (0.02, 0.90), (0.02, 0.97))]
    assert rounds[0] < rounds[1] and rounds[2] < rounds[3]
    assert rounds_to_decide(round_sd(0.02), 0.0, fixed, 0.05, paired=True) is None
    cand, base = power.simulate(np.random.default_rng(3), 2000, 40, cv=0.02, true_ratio=1.0)
    n = rounds[3]
    decided = power.decide(cand[:, :n], base[:, :n], Looks(n, n), GATE)
    assert 0.7 <= decided.rate(Verdict.PASS) <= 0.9, "about 80 % power at the estimated rounds"


@pytest.mark.parametrize("cv", [0.015, 0.03])
def test_an_adaptive_sweeps_rounds_to_decide_follow_its_boundary(cv):
    """With looks 3..30, the rounds the boundary says an unchanged side needs are the look by which
    about 80 % of simulated sweeps (or more: earlier looks decide some) have PASSed; the even split,
    reading its looks at smaller shares, needs more."""
    looks = Looks(3, 30)
    n = rounds_to_decide(round_sd(cv), -np.log(0.97), looks, 0.05, paired=True)
    even = rounds_to_decide(round_sd(cv), -np.log(0.97), Looks(3, 30, Spending.even), 0.05, paired=True)
    assert looks.first <= n < even and n <= looks.last
    cand, base = power.simulate(np.random.default_rng(int(cv * 1000)), 2000, looks.last, cv=cv,
                                true_ratio=1.0)
    decided = power.decide(cand, base, looks, GATE)
    by_then = np.mean((decided.verdict == Verdict.PASS) & (decided.rounds <= n))
    assert 0.75 <= by_then <= 0.97
