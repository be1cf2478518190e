"""Each sweep's bench logs stay within ``SHASWEEP_SWEEP_LOGS_MIB`` as it runs (one suite sweep left
738 MB): after every stored run the worker trims the oldest runs' large files, largest first (a log
to its last 64 KiB, a result document removed), notes what went, and never touches a run in progress
or another sweep."""

from __future__ import annotations

import os
import time
from dataclasses import replace

from fakebench.fakerepo import make_run

from orchestrator.worker.bench_task import execute_run, run_log_dir
from orchestrator.worker.log_trim import TAIL_BYTES, TRIM_NOTE, logs_in_use, trim_sweep_logs

MIB = 2**20


def make_run_dir(sweep_dir, name: str, age_s: float, result_mib: float = 1.0, log_mib: float = 0.5):
    run_dir = sweep_dir / name
    run_dir.mkdir(parents=True)
    (run_dir / "result.json").write_bytes(b"{" + b" " * int(result_mib * MIB) + b"}")
    (run_dir / "stderr.log").write_bytes(b"x" * int(log_mib * MIB) + b"\nTraceback: the last line\n")
    (run_dir / "argv.txt").write_text("python bench.py\n")
    when = time.time() - age_s
    for path in (*run_dir.iterdir(), run_dir):
        os.utime(path, (when, when))
    return run_dir


def size_of(directory) -> int:
    return sum(p.stat().st_size for p in directory.rglob("*") if p.is_file())


def test_the_oldest_runs_are_trimmed_largest_file_first_never_a_held_run_nor_another_sweep(tmp_path):
    sweep = tmp_path / "logs" / "suite-20260101T000000"
    oldest, older, newest = (make_run_dir(sweep, name, age) for name, age in
                             (("oldest", 300), ("older", 200), ("newest", 100)))
    held = make_run_dir(sweep, "held", 400)  # the oldest, but a run holds it
    other = make_run_dir(tmp_path / "logs" / "another-sweep", "run", 500)
    with logs_in_use(held):
        trimmed = trim_sweep_logs(sweep, max_mib=3.7)
    assert size_of(sweep) <= 3.7 * MIB, "the held run counts against the cap"
    assert trimmed == [oldest / "result.json", oldest / "stderr.log", older / "result.json"], trimmed
    assert not (oldest / "result.json").exists() and (oldest / "argv.txt").exists()
    tail = (oldest / "stderr.log").read_bytes()
    assert len(tail) == TAIL_BYTES and tail.endswith(b"Traceback: the last line\n"), "a log keeps its end"
    note = (oldest / TRIM_NOTE).read_text()
    assert "result.json: removed" in note and "SHASWEEP_SWEEP_LOGS_MIB=3.7 MiB" in note
    assert (older / "stderr.log").stat().st_size > MIB / 4, "trimming stops once the sweep fits"
    assert size_of(newest) > MIB and size_of(held) > MIB and size_of(other) > MIB


def test_a_planted_link_for_the_note_is_not_written_through(tmp_path):
    sweep = tmp_path / "logs" / "s"
    run_dir = make_run_dir(sweep, "run", 100)
    victim = tmp_path / "victim.txt"
    victim.write_text("mine\n")
    (run_dir / TRIM_NOTE).symlink_to(victim)
    trim_sweep_logs(sweep, max_mib=0.5)
    assert victim.read_text() == "mine\n" and not (run_dir / "result.json").exists()


def test_the_worker_keeps_a_sweep_within_its_cap_after_every_run(tmp_path, repo, monkeypatch):
    """Real runs of a json bench whose result document holds 1 MiB and whose stderr 300 KiB."""
    monkeypatch.setenv("SHASWEEP_SWEEP_LOGS_MIB", "2")
    code = ("import json, sys; sys.stderr.write('e' * 300000 + 'the end'); "
            "json.dump({{'rate': 5.0, 'pad': 'x' * 2**20}}, open(sys.argv[1], 'w'))")
    base = replace(make_run(repo, repo.shas[0], results_root=tmp_path / "results",
                            command=("{python}", "-c", code, "{result}"),
                            params={"num_envs": 8, "warmup": 0, "measure": 3}),
                   protocol="json", json_mapping={"throughput": "rate"}, audit_modules=())
    runs = [replace(base, run_key=f"run{i}", order=i, repeat=i) for i in range(4)]
    for run in runs:
        assert execute_run(run).status == "ok"
    sweep = run_log_dir(runs[0]).parent
    assert size_of(sweep) <= 2 * MIB
    newest = run_log_dir(runs[-1])
    assert (newest / "result.json").stat().st_size > MIB, "the run just stored keeps its files"
    first = run_log_dir(runs[0])
    assert not (first / "result.json").exists() and (first / TRIM_NOTE).exists()
    assert (first / "stderr.log").read_bytes().endswith(b"the end")
