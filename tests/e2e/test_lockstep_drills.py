"""Drills of what one side of a lockstep round can do to the round and the host: fill its own control
FIFO and stop reading it, flood its stream or run a CPU hog while parked, send block times that are
not finite (``fakebench/lockstep_hostile.py``). Real ``shasweep run`` calls (a bench worker, the
round task, real FIFOs, processes and signals): each round ends by its timeout, a cancel or a failure
naming the side, the worker's memory stays bounded, and nothing that is not JSON is stored."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pandas as pd
import psutil
import yaml
from drill_helpers import bench_pids, client, finish, lab_cluster, record_of
from fakebench.fakerepo import FakeRepo, make_lockstep_repo
from fakebench.waits import is_gone, wait_for
from filelock import FileLock

from orchestrator.errors import EXIT_OK, EXIT_RUN_FAILED

HOSTILE = Path(__file__).resolve().parents[1] / "orchestrator" / "fakebench" / "lockstep_hostile.py"
MiB = 2**20


def lockstep_sweep(repo: FakeRepo, cases: list[str], timeout_s: float) -> Path:
    """A lockstep sweep of the hostile bench, its case its mode: side ``hostile`` misbehaves, side
    ``victim`` behaves. Blocks of 10 steps of 20 ms."""
    sweep = {"name": "drill", "sides": {"victim": {"ref": "HEAD~1", "overrides": ["params.role=victim"]},
                                        "hostile": {"ref": "HEAD"}},
             "baseline": "victim", "cases": cases,
             "command": ["{python}", str(HOSTILE), "--stream", "{stream}", "--control", "{control}",
                         "--mode", "{case}", "--role", "{role}", "--step-ms", "{step_ms}"],
             "params": {"role": "hostile", "step_ms": 20, "warmup": 1, "measure": 1},
             "order": "lockstep", "lockstep": {"block_steps": 10, "blocks": 3}, "repeats": 1,
             "timeout_s": timeout_s, "continue_on_error": True}
    path = repo.path / "drill.yaml"
    path.write_text(yaml.safe_dump(sweep, sort_keys=False))
    return path


class PeakRSS:
    """The largest resident set any process under ``root`` had, sampled every 50 ms in a thread."""

    def __init__(self, root: int) -> None:
        self.root, self.peak, self._done = psutil.Process(root), 0, threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._done.wait(0.05):
            try:
                processes = self.root.children(recursive=True)
            except psutil.Error:
                return
            for process in processes:
                try:
                    self.peak = max(self.peak, process.memory_info().rss)
                except psutil.Error:
                    continue

    def stop(self) -> int:
        self._done.set()
        self._thread.join()
        return self.peak


def test_a_side_that_floods_hogs_or_sends_infinite_times_while_parked_fails_its_round_by_name(tmp_path):
    repo = make_lockstep_repo(tmp_path)
    proc = client(repo, ["run", str(lockstep_sweep(repo, ["flood", "hog", "inf-times"], timeout_s=5)),
                         "--no-progress"], tmp_path / "home", tmp_path / "client.out",
                  SHASWEEP_LOCK=str(tmp_path / "bench.lock"))
    memory = PeakRSS(proc.pid)
    code = finish(proc, timeout_s=240)
    peak = memory.stop()
    out = (tmp_path / "client.out").read_text()
    assert code == EXIT_RUN_FAILED and "Traceback" not in out, out
    # 150 MiB of blank lines read whole took the worker from 149 MiB to 2.5 GiB
    assert peak < 1024 * MiB, f"a process of the sweep reached {peak / MiB:.0f} MiB"
    runs = {(o["case"], o["side"]): o for o in record_of(repo)["outcomes"]}
    hostile = {case: runs[(case, "hostile")]["error"] for case in ("flood", "hog", "inf-times")}
    assert "to its stream while parked" in hostile["flood"], hostile
    assert "of CPU while parked" in hostile["hog"], hostile
    assert "started=inf" in hostile["inf-times"] and "ended=-inf" in hostile["inf-times"], hostile
    for case in hostile:
        assert runs[(case, "hostile")]["status"] == "failed"
        assert "side 'hostile'" in hostile[case] and "killed with its lockstep round" in \
            runs[(case, "victim")]["error"]
    rows = pd.read_parquet(repo.path / "results" / "runs")
    for blocks in rows["blocks"].dropna():  # whatever is stored is JSON: no Infinity, no NaN
        json.loads(blocks, parse_constant=lambda name: (_ for _ in ()).throw(ValueError(name)))


def test_a_bench_that_fills_its_control_fifo_is_cancelled_and_its_standing_worker_frees_the_host(tmp_path):
    repo = make_lockstep_repo(tmp_path)
    home = tmp_path / "home"
    with lab_cluster(tmp_path, home, "lab") as scheduler:
        sweep = lockstep_sweep(repo, ["fill-control"], timeout_s=600)
        proc = client(repo, ["run", str(sweep), "--no-progress", "--scheduler", scheduler.address], home,
                      tmp_path / "client.out")
        # its header follows the full FIFO: once it is there, the worker's next command finds no room
        wait_for(lambda: len(bench_pids(home)) == 2, "both sides' benches", timeout_s=120)
        cancel = client(repo, ["cancel", "latest", "--wait-s", "30"], home, tmp_path / "cancel.out")
        assert finish(cancel) == EXIT_OK, (tmp_path / "cancel.out").read_text()
        assert finish(proc, timeout_s=120) == EXIT_RUN_FAILED, (tmp_path / "client.out").read_text()
        assert scheduler.proc.poll() is None
        with FileLock(tmp_path / "bench.lock", timeout=30):  # the worker stands and holds it no more
            pass
    record = record_of(repo)
    assert record["status"] == "stopped" and "cancel" in record["stopped_reason"]
    statuses = {o["side"]: o["status"] for o in record["outcomes"]}
    assert statuses == {"victim": "cancelled", "hostile": "cancelled"}, record["outcomes"]
    assert all(is_gone(pid) for pid in bench_pids(home)), "the round's processes died with it"
