"""The fleet's pure parts: rounds of a plan, the per-host-id lock path, the host id, the board's lanes
and its handling of a re-queued round."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fakebench.fakerepo import FakeRepo, make_run  # noqa: E402

from orchestrator.contract import host_id  # noqa: E402
from orchestrator.dashboard.board import SweepBoard  # noqa: E402
from orchestrator.dashboard.lanes import format_lane, host_lanes  # noqa: E402
from orchestrator.dispatch.fleet import split_rounds  # noqa: E402
from orchestrator.spec.load import spec_from_config  # noqa: E402
from orchestrator.worker.hostinfo import collect_host  # noqa: E402
from orchestrator.worker.machine_lock import DEFAULT_LOCK_DIR, host_lock_path  # noqa: E402

REPO = FakeRepo(path=Path("/nonexistent"), shas=("a" * 40, "b" * 40))


def test_rounds_are_the_runs_of_one_repeat_in_plan_order(tmp_path):
    runs = [replace(make_run(REPO, REPO.shas[i % 2], order=i, results_root=tmp_path), repeat=i // 2)
            for i in range(6)]
    shuffled = [runs[3], runs[0], runs[5], runs[1], runs[4], runs[2]]
    assert split_rounds(shuffled) == [runs[0:2], runs[2:4], runs[4:6]]


def test_the_lock_is_one_file_per_host_id(tmp_path, monkeypatch):
    monkeypatch.delenv("SHASWEEP_LOCK", raising=False)
    monkeypatch.delenv("SHASWEEP_LOCK_DIR", raising=False)
    monkeypatch.setenv("SHASWEEP_HOME", str(tmp_path / "home"))
    assert host_lock_path("gpu-1") == DEFAULT_LOCK_DIR / "gpu-1.lock", "machine-wide, not under the home"
    assert host_lock_path("gpu-1") != host_lock_path("gpu-2")
    assert host_lock_path("../x y").parent == DEFAULT_LOCK_DIR, "an id cannot leave the directory"
    monkeypatch.setenv("SHASWEEP_LOCK_DIR", str(tmp_path / "machine"))
    assert host_lock_path("gpu-1") == tmp_path / "machine" / "gpu-1.lock"
    monkeypatch.setenv("SHASWEEP_LOCK", str(tmp_path / "one.lock"))
    assert host_lock_path("gpu-1") == tmp_path / "one.lock"


def test_the_host_id_is_the_override_or_the_hostname(monkeypatch):
    import platform

    monkeypatch.delenv("SHASWEEP_HOST_ID", raising=False)
    assert host_id() == platform.node()
    monkeypatch.setenv("SHASWEEP_HOST_ID", "gpu-7")
    assert host_id() == "gpu-7" and collect_host().id == "gpu-7"


@pytest.mark.parametrize("hosts, error", [
    ("one", None), ("all", None), (["gpu-1", "gpu-2"], None),
    ("some", "hosts: must be one, all or a list of host ids"), ([], "hosts: must be one, all"),
    (["gpu-1", "gpu-1"], "hosts: host ids must not repeat"), (["a b"], "hosts[0]: 'a b' is not a host id"),
])
def test_the_hosts_key(hosts, error):
    from omegaconf import OmegaConf

    from orchestrator.errors import SpecError

    raw = OmegaConf.create({"name": "x", "sides": {"a": {"ref": "HEAD"}}, "baseline": "a",
                            "cases": ["sac/go2_joystick_flat/mujoco"], "hosts": hosts})
    if error is None:
        assert spec_from_config(raw).hosts == hosts
    else:
        with pytest.raises(SpecError, match=error.replace("[", r"\[").replace("]", r"\]")):
            spec_from_config(raw)


def planned(board: SweepBoard) -> None:
    runs = [{"run_key": f"k{i}", "order": i, "side": "ab"[i % 2], "case": "c", "repeat": i // 2}
            for i in range(6)]
    board.feed({"sweep_id": "s", "event": "planned", "runs": runs})


def test_lanes_show_each_hosts_current_run_queue_and_rate():
    board = SweepBoard()
    planned(board)
    for key, host in (("k0", "h1"), ("k2", "h2")):
        board.feed({"sweep_id": "s", "run_key": key, "event": "started", "total": 10, "host_id": host})
    board.feed({"sweep_id": "s", "run_key": "k0", "event": "finished", "status": "ok", "throughput": 5.0,
                "host_id": "h1"})
    board.feed({"sweep_id": "s", "run_key": "k1", "event": "started", "total": 10, "host_id": "h1"})
    lanes = {lane["host_id"]: lane for lane in board.snapshot("s")["lanes"]}
    assert set(lanes) == {"h1", "h2"}
    assert lanes["h1"]["current"]["order"] == 1 and lanes["h1"]["done"] == 1 and lanes["h1"]["queue"] == []
    assert lanes["h2"]["current"]["order"] == 2 and lanes["h2"]["queue"] == [3], "the rest of its round"
    assert format_lane(lanes["h2"]).startswith("host h2: running #2 a c (0/10), queue #3, 0 done")
    assert host_lanes([], 0.0) == []


def test_a_requeued_round_goes_back_to_the_queue_and_takes_the_redo():
    board = SweepBoard()
    planned(board)
    board.feed({"sweep_id": "s", "run_key": "k4", "event": "finished", "status": "ok", "host_id": "h3"})
    board.feed({"sweep_id": "s", "event": "requeued", "host_id": "h3", "run_keys": ["k4", "k5"]})
    runs = {run["run_key"]: run for run in board.snapshot("s")["runs"]}
    assert runs["k4"]["status"] == "queued" and runs["k4"]["host_id"] is None
    board.feed({"sweep_id": "s", "run_key": "k4", "event": "started", "total": 3, "host_id": "h1"})
    assert {r["run_key"]: r for r in board.snapshot("s")["runs"]}["k4"]["host_id"] == "h1"


def test_a_dead_hosts_round_sets_aside_every_run_it_wrote_even_without_an_outcome(tmp_path):
    """The race the kill -9 drill can hit: a run's files are written, then the worker dies before the
    client fetched its outcome. The redo must not overwrite that run: it is set aside too."""
    from types import SimpleNamespace

    from test_results import outcome, planned

    from orchestrator.dispatch.fleet import _Fleet, _Job, _Lane
    from orchestrator.dispatch.host_choice import BenchHost
    from orchestrator.store.parquet import write_run
    from orchestrator.store.query import run_statuses

    class DeadHost(BenchHost):
        def alive(self, client: object) -> bool:
            return False

    runs = [replace(planned(tmp_path, f"k{i}", "s"), order=i) for i in range(3)]
    write_run(runs[0], outcome())  # its outcome arrived
    write_run(runs[1], outcome())  # written, but its outcome died with the worker
    requeued = []
    hooks = SimpleNamespace(on_requeued=lambda runs, host, why: requeued.append((len(runs), host)))
    fleet = _Fleet(None, iter([]), [], hooks)
    lane = _Lane(DeadHost("h1", ()), _Job(runs), done=[runs[0].outcome(status="ok")])
    fleet.result.outcomes["k0"] = runs[0].outcome(status="ok")
    fleet._host_died(lane, "its bench worker died")
    assert run_statuses(tmp_path / "results", "s") == {}, "no run of the dead host's round stays"
    aside = sorted(p.name.split(".")[0] for p in (tmp_path / "results" / "superseded").glob("sweep=s/runs/*"))
    assert aside == ["k0", "k1"] and fleet.result.outcomes == {} and requeued == [(3, "h1")]
