"""The live board: the state built from progress messages, and a real sweep feeding /shasweep over HTTP."""

from __future__ import annotations

import logging
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest
from bokeh.client import pull_session
from bokeh.models import ColumnDataSource, Div
from distributed import Client, LocalCluster
from fakebench.fakerepo import make_fake_repo, make_run

from orchestrator.contract import STATUSES as FINAL_STATUSES
from orchestrator.contract import block_spans
from orchestrator.dashboard import page_url
from orchestrator.dashboard.board import MAX_SWEEPS, SweepBoard
from orchestrator.dashboard.page import BoardPage, summary_html, table_data
from orchestrator.dashboard.plugin import board_snapshot
from orchestrator.dispatch.cluster import DASHBOARD_PRELOAD
from orchestrator.dispatch.dispatcher import dispatch_runs, task_key

RUNS = [{"run_key": f"k{i}", "order": i, "side": "ab"[i % 2], "case": "sac/fake/none", "repeat": i // 2}
        for i in range(3)]


def board_cluster() -> LocalCluster:
    """A scheduler with the board preloaded and one in-process bench worker (threads)."""
    return LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tcp://",
                        host="127.0.0.1", dashboard_address="127.0.0.1:0", resources={"GPU": 1},
                        scheduler_kwargs={"preload": [DASHBOARD_PRELOAD]}, silence_logs=logging.ERROR)


def msg(event: str, run: dict, **fields) -> dict:
    return {"sweep_id": "s1", "event": event, **run, **fields}


def test_board_follows_a_sweep_from_plan_to_end():
    board = SweepBoard()
    board.feed({"sweep_id": "s1", "event": "planned", "runs": RUNS})
    assert [r["status"] for r in board.snapshot("s1")["runs"]] == ["queued"] * 3
    board.feed(msg("waiting", RUNS[0]))
    board.feed(msg("started", RUNS[0], total=3))
    for step in range(3):
        board.feed(msg("step", RUNS[0], step=step, warmup=step == 0, done=step + 1, total=3,
                       phases={"physics_ms": 1.0 + step, "update_state_ms": 0.5, "later_ms": 9.0}))
    running = board.snapshot("s1")
    assert running["current"] == "k0" and running["runs"][0] | {"done": 3, "total": 3} == running["runs"][0]
    assert running["counts"]["running"] == 1 and running["counts"]["queued"] == 2
    assert running["phases"]["physics_ms"] == [1.0, 2.0, 3.0]
    assert running["phases"]["reset_done_ms"] == [0.0] * 3, "a phase the bench does not report is 0.0"
    assert running["phases"]["warmup"] == [True, False, False]

    board.feed(msg("finished", RUNS[0], status="ok", throughput=1000.0))
    board.feed(msg("step", RUNS[0], step=9, done=9, total=3, phases={}))  # late: ignored
    board.feed(msg("started", RUNS[1], total=3))
    assert board.snapshot("s1")["phases"]["step"] == [], "a new run starts a new chart"
    board.feed(msg("finished", RUNS[1], status="cancelled", error="sweep cancelled"))
    outcomes = [{"run_key": "k0", "status": "ok", "throughput": 1000.0},
                {"run_key": "k1", "status": "cancelled", "error": "sweep cancelled"},
                {"run_key": "k2", "status": "cancelled", "error": "not run: the sweep stopped"}]
    board.feed({"sweep_id": "s1", "event": "ended", "stop_reason": "cancelled", "outcomes": outcomes})
    ended = board.snapshot()
    assert ended["state"] == "stopped" and ended["stop_reason"] == "cancelled"
    assert [r["status"] for r in ended["runs"]] == ["ok", "cancelled", "cancelled"]
    assert ended["runs"][0]["throughput"] == 1000.0 and ended["runs"][0]["done"] == 3


def test_board_ignores_foreign_messages_and_keeps_recent_sweeps():
    board = SweepBoard()
    for junk in (None, "text", {"event": "step"}, {"sweep_id": "s"}, [1, 2]):
        board.feed(junk)
    assert board.snapshot() is None and board.sweep_ids() == []
    board.feed(msg("started", RUNS[2], total=None))  # no plan seen: the run appears on its own
    assert board.snapshot("s1")["runs"][0]["status"] == "running"
    for i in range(MAX_SWEEPS + 3):
        board.feed({"sweep_id": f"x{i}", "event": "planned", "runs": RUNS[:1]})
    assert len(board.sweep_ids()) == MAX_SWEEPS and board.sweep_ids()[0] == f"x{MAX_SWEEPS + 2}"
    assert board.snapshot("s1") is None, "the oldest sweeps are dropped"
    board.record_host({"worker": "tcp://w:1", "host": {"hostname": "h"}})
    board.record_host({"worker": "tcp://w:2", "host": "not a record"})
    assert board.hosts == {"tcp://w:1": {"hostname": "h"}}


def test_page_url():
    assert page_url("http://127.0.0.1:8787/status") == "http://127.0.0.1:8787/shasweep"
    assert page_url("http://h:1/prefix/status") == "http://h:1/prefix/shasweep"
    assert page_url(None) is None


@pytest.fixture
def repo(tmp_path, monkeypatch):
    monkeypatch.setenv("SHASWEEP_HOME", str(tmp_path / "home"))
    return make_fake_repo(tmp_path)


def test_a_sweep_feeds_the_board_and_the_page_serves_it(tmp_path, repo):
    params = {"num_envs": 8, "warmup": 1, "measure": 12, "threads": 1}
    runs = [make_run(repo, sha, order=i, results_root=tmp_path / "results", params=params,
                     extra_args=("--step-ms", "20")) for i, sha in enumerate(repo.shas)]
    connected: list[tuple[str, str | None]] = []
    with board_cluster() as cluster, Client(cluster) as client:
        outcome = dispatch_runs(runs, scheduler=cluster.scheduler_address, continue_on_error=False,
                            show_progress=False, on_connect=lambda *args: connected.append(args))
        view = client.run_on_scheduler(board_snapshot, sweep_id="test-sweep")
        with urllib.request.urlopen(outcome.dashboard_url, timeout=30) as response:
            status, page = response.status, response.read().decode()
        with pull_session(url=outcome.dashboard_url) as session:  # the document a browser gets
            doc = session.document
            texts = [div.text for div in doc.select({"type": Div})]
            tables = [src.data for src in doc.select({"type": ColumnDataSource}) if "status" in src.data]
    assert connected == [(cluster.scheduler_address, outcome.dashboard_url)]
    assert outcome.dashboard_url == page_url(cluster.dashboard_link)
    sweep = view["sweep"]
    assert sweep["state"] == "finished" and sweep["stop_reason"] is None
    assert [(r["order"], r["side"], r["status"]) for r in sweep["runs"]] == [(0, "base", "ok"),
                                                                            (1, "cand", "ok")]
    assert [r["throughput"] for r in sweep["runs"]] == [o.throughput for o in outcome.runs]
    assert sweep["current"] == runs[1].run_key and sweep["runs"][1]["done"] == 13
    assert sweep["phases"]["physics_ms"] and all(ms > 0 for ms in sweep["phases"]["physics_ms"])
    assert status == 200 and "Bokeh" in page
    assert any("<b>test-sweep</b>: finished, 2/2 runs done" in text for text in texts)
    assert any("base: median throughput" in text for text in texts)
    assert [t["status"] for t in tables] == [["ok", "ok"]] and tables[0]["side"] == ["base", "cand"]


def test_a_scheduler_started_without_a_dashboard_builds_it_on_the_first_request():
    """The embedded cluster's way: HTTP served at once, Bokeh's pages built when a browser asks."""
    with LocalCluster(n_workers=0, processes=False, protocol="tcp://", host="127.0.0.1",
                      dashboard_address="127.0.0.1:0", silence_logs=logging.ERROR,
                      scheduler_kwargs={"preload": [DASHBOARD_PRELOAD], "dashboard": False}) as cluster:
        applications = cluster.scheduler.http_application.applications
        assert not any("Bokeh" in type(app).__name__ for app in applications), "no dashboard at start"
        board = page_url(cluster.dashboard_link)
        with urllib.request.urlopen(board, timeout=60) as response:
            assert response.status == 200 and response.url == board and "Bokeh" in response.read().decode()
        with urllib.request.urlopen(board.replace("/shasweep", "/status"), timeout=60) as response:
            assert response.status == 200, "Dask's own pages came with it"
        assert sum("Bokeh" in type(app).__name__ for app in applications) == 2


def test_header_and_table_agree_while_a_sweep_runs(tmp_path, repo):
    """Snapshots taken while a real sweep runs: the header's runs-done count and running run are the
    table's, and the axes hold every point."""
    params = {"num_envs": 8, "warmup": 1, "measure": 10, "threads": 1}
    runs = [make_run(repo, repo.shas[i % 2], order=i, results_root=tmp_path / "results", params=params,
                     extra_args=("--step-ms", "20")) for i in range(4)]
    seen_running = 0
    with board_cluster() as cluster, Client(cluster) as client:
        with ThreadPoolExecutor(1) as pool:
            sweep = pool.submit(dispatch_runs, runs, scheduler=cluster.scheduler_address,
                                continue_on_error=False, show_progress=False)
            while not sweep.done():
                snap = client.run_on_scheduler(board_snapshot, sweep_id="test-sweep")["sweep"]
                if snap is None:
                    continue
                header, table = summary_html(snap), table_data(snap)
                final = sum(status in FINAL_STATUSES for status in table["status"])
                assert f"{final}/{len(runs)} runs done" in header
                live = [order for order, status in zip(table["order"], table["status"], strict=True)
                        if status in ("waiting", "running")]
                if live:
                    seen_running += 1
                    assert f" #{max(live)} " in header, (header, table)
                else:
                    assert "running #" not in header and "waiting #" not in header
                if final and snap["state"] == "running":
                    assert "ETA " in header
            assert not sweep.result().stopped_early
    assert seen_running > 0, "the sweep was observed while a run was running"


def test_charts_hold_every_point_with_padding():
    board = SweepBoard()
    page = BoardPage(board)
    board.feed(msg("planned", {}, runs=RUNS))
    for run, throughput in zip(RUNS, (22419.0, 22420.5, 30000.0), strict=True):
        board.feed(msg("finished", run, status="ok", throughput=throughput, wall_s=2.0))
    page.update()
    fig = page._throughput_fig
    assert (fig.y_range.start, fig.x_range.start, fig.x_range.end) == (0.0, -0.5, 2.5)
    assert fig.y_range.end > 30000.0, "the highest point is inside the frame, not on its edge"


def test_task_keys_name_side_case_and_repeat(tmp_path, repo):
    run = make_run(repo, repo.shas[1], order=3, results_root=tmp_path)
    assert task_key(run) == f"shasweep-cand-sac.fake.none-r3-{run.run_key}"


def test_the_clients_outcome_ends_a_run_whose_worker_died():
    """The dispatcher publishes each outcome too: a run whose worker died mid-run leaves 'running'."""
    board = SweepBoard()
    board.feed(msg("planned", {}, runs=RUNS))
    board.feed(msg("started", RUNS[0], total=10))
    board.feed(msg("finished", RUNS[0], status="failed", error="the bench worker left the cluster"))
    board.feed(msg("started", RUNS[1], total=10))
    board.feed(msg("finished", RUNS[0], status="ok", throughput=1.0))  # late: the first final status stays
    snap = board.snapshot("s1")
    assert [r["status"] for r in snap["runs"]] == ["failed", "running", "queued"]
    assert " #1 " in summary_html(snap) and "1/3 runs done" in summary_html(snap)


def test_blocks_without_finite_times_are_left_off_the_timeline():
    blocks = [{"side": "a", "block": 0, "started": 10.0, "ended": 11.0, "wall_s": 1.0},
              {"side": "b", "block": 0, "started": float("inf"), "ended": float("-inf"), "wall_s": 1.0},
              {"side": "b", "block": 1, "started": float("nan"), "ended": 12.0, "wall_s": 1.0}]
    spans = block_spans(blocks)  # an older shasweep stored Infinity as a block's times
    assert [(s["side"], s["left"], s["right"]) for s in spans] == [("a", 0.0, 1.0)]


def test_a_lockstep_round_s_blocks_show_per_side_on_the_timeline():
    board = SweepBoard()
    page = BoardPage(board)
    runs = [{"run_key": f"k{i}", "order": i, "side": "ab"[i % 2], "case": "c", "repeat": i // 2}
            for i in range(4)]
    board.feed(msg("planned", {}, runs=runs))
    for run in runs[:2]:
        board.feed(msg("quiet", run, quiet_wait_s=4.0, quiet_met=False))
        board.feed(msg("started", run, total=4))
    t = 1000.0
    for cycle, side in enumerate([0, 1, 1, 0]):  # A B B A: measured blocks of 2 steps, each after a warm-up
        for warmup in (True, False):
            board.feed(msg("block", runs[side], block=2 * cycle + (not warmup),
                           cycle=None if warmup else cycle // 2, steps=1 if warmup else 2, warmup=warmup,
                           started=t, ended=t + 0.5, wall_s=0.5))
            t += 0.6
    snap = board.snapshot("s1")
    assert snap["round"] == ["c", 0] and len(snap["blocks"]) == 8
    assert [r["done"] for r in snap["runs"][:2]] == [4, 4], "measured steps counted from the blocks"
    page.update()
    data, fig = page.blocks.data, page._timeline_fig
    assert fig.visible and list(fig.y_range.factors) == ["a", "b"]
    assert data["left"][0] == 0.0 and data["side"][:4] == ["a", "a", "b", "b"]
    assert data["alpha"][:2] == [0.3, 0.9], "warm-up blocks are faint"
    assert "longest 4.0 s, 2 of 2 runs started without a quiet second" in summary_html(snap)
    board.feed(msg("finished", runs[0], status="ok", throughput=10.0, ran_in="lockstep"))
    assert table_data(board.snapshot("s1"))["ran_in"][:2] == ["lockstep", ""]
    board.feed(msg("block", runs[2], block=0, cycle=None, steps=1, warmup=True, started=t, ended=t + 1,
                   wall_s=1))
    assert board.snapshot("s1")["round"] == ["c", 1] and len(board.snapshot("s1")["blocks"]) == 1
