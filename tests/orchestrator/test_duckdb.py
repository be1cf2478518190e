"""duckdb queries the Parquet results in place, as README.md and docs/design.md show (real files)."""

from __future__ import annotations

import dataclasses

import duckdb
import pytest
from test_results import outcome, planned

from orchestrator.store.parquet import write_run
from orchestrator.store.query import read_runs


@pytest.fixture
def root(tmp_path):
    for key, sweep, side, throughput in [("r1", "s1", "base", 100.0), ("r2", "s1", "base", 300.0),
                                         ("r3", "s1", "cand", 50.0), ("r4", "s2", "base", 7.0)]:
        run = dataclasses.replace(planned(tmp_path, key, sweep), side=side)
        write_run(run, outcome(throughput=throughput, extra_phase="update_state.command.compute_ms"
                               if sweep == "s2" else None))
    write_run(planned(tmp_path, "r5", "s1"), outcome(status="failed", throughput=None))
    return tmp_path / "results"


def test_the_readme_query_matches_pandas(root):
    query = f"""SELECT sweep, side, median(throughput) AS throughput, count(*) AS runs
                FROM '{root}/runs/**/*.parquet' WHERE status = 'ok' GROUP BY ALL ORDER BY ALL"""
    rows = duckdb.sql(query).fetchall()
    assert rows == [("s1", "base", 200.0, 2), ("s1", "cand", 50.0, 1), ("s2", "base", 7.0, 1)]
    runs = read_runs(root)
    expected = runs[runs.status == "ok"].groupby(["sweep", "side"])["throughput"].median()
    assert [r[2] for r in rows] == expected.tolist()


def test_phases_only_some_files_have_need_union_by_name(root):
    query = f"""SELECT run_key, "update_state.command.compute_ms" AS ms
                FROM read_parquet('{root}/runs/**/*.parquet', union_by_name = true)
                WHERE ms IS NOT NULL"""
    assert duckdb.sql(query).fetchall() == [("r4", 0.5)]


def test_steps_join_runs_on_run_key(root):
    query = f"""SELECT r.side, avg(s.ms) FROM '{root}/steps/**/*.parquet' s
                JOIN '{root}/runs/**/*.parquet' r USING (run_key)
                WHERE NOT s.warmup AND s.phase = 'physics_ms' AND r.status = 'ok' GROUP BY ALL ORDER BY ALL"""
    assert duckdb.sql(query).fetchall() == [("base", 2.0), ("cand", 2.0)]
