"""A bench that reports a million steps, run by a real Dask worker process: the worker streams them
to disk and stays within 300 MiB of its idle size (it held every step, 1.6 GB, before)."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from distributed import Client, LocalCluster

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "orchestrator"))
from fakebench.fakerepo import make_fake_repo, make_run  # noqa: E402
from fakebench.worker_memory import peak_growth  # noqa: E402

from orchestrator.dispatch.cluster import BENCH_RESOURCE  # noqa: E402

FLOOD = Path(__file__).resolve().parents[1] / "orchestrator" / "fakebench" / "step_flood.py"
COMMAND = ("{python}", str(FLOOD), "--stream", "{stream}", "--warmup", "{warmup}", "--measure", "{measure}",
           "--num-envs", "{num_envs}")
STEPS = 1_000_000
BOUND_MIB = 300


@pytest.mark.slow
def test_a_million_steps_keep_the_worker_within_its_bound(tmp_path, monkeypatch):
    monkeypatch.setenv("SHASWEEP_HOME", str(tmp_path / "home"))  # inherited by the worker process
    repo = make_fake_repo(tmp_path)

    def run(measure: int, order: int):
        return make_run(repo, repo.shas[0], results_root=tmp_path / "results", command=COMMAND, order=order,
                        timeout_s=1800, params={"num_envs": 8, "warmup": 5, "measure": measure, "threads": 1})

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, resources={BENCH_RESOURCE: 1},
                      host="127.0.0.1", dashboard_address=None, silence_logs=logging.ERROR) as cluster, \
            Client(cluster) as client:
        measured = client.submit(peak_growth, run(1000, 0), run(STEPS, 1), resources={BENCH_RESOURCE: 1},
                                 pure=False).result(timeout=1800)

    outcome = measured["outcome"]
    assert outcome.status == "ok", outcome.error
    growth, idle = measured["peak_mib"] - measured["idle_mib"], measured["idle_mib"]
    assert growth < BOUND_MIB, f"the worker grew {growth:.0f} MiB over its idle {idle:.0f} MiB"
    assert pq.ParquetFile(outcome.steps_file).metadata.num_rows == 3 * (STEPS + 5), "every step stored"
    row = pd.read_parquet(outcome.runs_file).iloc[0]
    assert row["steps"] == STEPS and row["host_step_cv"] == 0.0 and row["audited"]
