"""Cancel and board events count only when they come from the sweep's own client: they carry the
token of its record, which a stranger connected to the scheduler does not know."""

from __future__ import annotations

import time
from dataclasses import replace

from distributed import Client, Event
from fakebench.fakerepo import make_run
from test_dispatch import repo, threaded_cluster  # noqa: F401 - the repo fixture

from orchestrator.contract import cancel_event_name
from orchestrator.dashboard.board import SweepBoard
from orchestrator.worker.bench_task import execute_run


def test_the_board_ignores_messages_without_the_sweeps_token():
    board = SweepBoard()
    board.feed({"sweep_id": "s", "event": "planned", "token": "t0k3n",
                "runs": [{"run_key": "r1", "order": 0, "side": "a", "case": "c", "repeat": 0}]})
    board.feed({"sweep_id": "s", "event": "finished", "run_key": "r1", "status": "ok", "throughput": 1e12,
                "token": "forged"})
    board.feed({"sweep_id": "s", "event": "ended", "stop_reason": "forged", "outcomes": []})
    snapshot = board.snapshot("s")
    assert snapshot["state"] == "running" and snapshot["runs"][0]["status"] == "queued"
    board.feed({"sweep_id": "s", "event": "finished", "run_key": "r1", "status": "ok", "throughput": 5.0,
                "token": "t0k3n"})
    assert board.snapshot("s")["runs"][0]["status"] == "ok"
    assert "t0k3n" not in repr(board.snapshot("s")), "the board never shows the token"


def test_a_cancel_without_the_token_does_not_stop_the_sweep(tmp_path, repo):  # noqa: F811
    run = replace(make_run(repo, repo.shas[0], results_root=tmp_path / "results", timeout_s=120,
                           extra_args=("--mode", "hang", "--child-pid-file", str(tmp_path / "pid"))),
                  token="t0k3n")
    with threaded_cluster(GPU=1) as remote, Client(remote) as client:
        future = client.submit(execute_run, run, pure=False, resources={"GPU": 1})
        while not (tmp_path / "pid").exists() and not future.done():
            time.sleep(0.05)
        Event(cancel_event_name(run.sweep_id), client=client).set()  # a stranger's guess
        time.sleep(2)
        assert not future.done(), "a cancel event without the token stopped the bench"
        Event(cancel_event_name(run.sweep_id, "t0k3n"), client=client).set()
        outcome = future.result(timeout=120)
    assert outcome.status == "cancelled"
