"""Durations come from a monotonic clock and ``latest`` is the most recently created record: a step
of the wall clock (NTP, a suspended VM, a changed time zone setting) moves the timestamps people
read, never a duration the tool adds up (``wall_s``, the adaptive ``budget_s``) nor which sweep is
the latest."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pandas as pd
from fakebench.fakerepo import make_run
from test_report import write_sweep

from orchestrator.cli.main import main
from orchestrator.store import bisects, records
from orchestrator.store.records import latest_sweep_id, next_sequence, read_record, write_record
from orchestrator.worker import bench_task

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


class SteppedClock:
    """``datetime`` whose ``now`` says ``T0``, then an hour earlier (the clock was stepped back)."""

    def __init__(self) -> None:
        self.calls = 0

    def now(self, tz=None) -> datetime:
        self.calls += 1
        return T0 if self.calls == 1 else T0 - timedelta(hours=1)


def test_a_clock_step_during_a_run_moves_its_timestamps_not_its_duration(tmp_path, repo, monkeypatch):
    clock = SteppedClock()
    monkeypatch.setattr(bench_task, "datetime", clock)
    outcome = bench_task.execute_run(make_run(repo, repo.shas[0], results_root=tmp_path / "results"))
    assert outcome.status == "ok", outcome.error
    row = pd.read_parquet(outcome.runs_file).iloc[0]
    assert row["started_at"] == T0 and row["ended_at"] == T0 - timedelta(hours=1), "as the clock said"
    assert 0 < row["wall_s"] < 60 and outcome.wall_s == row["wall_s"], "the monotonic duration"


def created(root, name: str, id_time: datetime) -> str:
    """A sweep recorded as ``shasweep run`` records it (id reserved, then its creation number), with
    ``id_time`` the wall clock's reading at the time."""
    sweep_id = records.reserve_sweep_id(root, name, id_time)
    write_sweep(root, sweep_id, [], ["sac/fake/none"])
    write_record(root, replace(read_record(root, sweep_id), sequence=next_sequence(records.sweeps_dir(root))))
    return sweep_id


def test_latest_is_the_most_recently_created_sweep_whatever_its_id_says(tmp_path, capsys):
    first = created(tmp_path, "ab", T0)
    second = created(tmp_path, "ab", T0 - timedelta(days=3))  # the clock was stepped back meanwhile
    assert second < first, "the ids' times disagree with the order they were created in"
    assert latest_sweep_id(tmp_path) == second
    assert main(["list", "--results", str(tmp_path)]) == 0
    listed = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert listed == [second, first], "newest created first"


def test_records_without_a_creation_number_are_older_than_those_with_one(tmp_path):
    """Records written before creation numbers existed still load, ordered by their ids' times, and
    come before any numbered one."""
    write_sweep(tmp_path, "ab-20990101T000000", [], ["sac/fake/none"])  # older shasweep, a late id
    write_sweep(tmp_path, "ab-20980101T000000", [], ["sac/fake/none"])
    assert read_record(tmp_path, "ab-20990101T000000").sequence is None
    assert latest_sweep_id(tmp_path) == "ab-20990101T000000"
    numbered = created(tmp_path, "ab", T0)
    assert read_record(tmp_path, numbered).sequence == 1 and latest_sweep_id(tmp_path) == numbered
    assert next_sequence(records.sweeps_dir(tmp_path)) == 2


def test_latest_bisect_is_the_most_recently_created(tmp_path):
    ids = []
    for when in (T0, T0 - timedelta(days=1)):
        bisect_id = bisects.reserve_bisect_id(tmp_path, "bis", when)
        sequence = next_sequence(bisects.bisect_dir(tmp_path))
        bisects.write_bisect(tmp_path, bisect_id, {"bisect_id": bisect_id, "created": when.isoformat(),
                                                   "sequence": sequence})
        ids.append(bisect_id)
    assert bisects.latest_bisect_id(tmp_path) == ids[1]


def test_list_shows_the_latest_sweeps_and_says_how_many_it_left_out(tmp_path, capsys):
    """``--last N`` (default 50) lists the N most recently created, ``--all`` every one; a bad N is
    exit 2 naming the flag."""
    made = [created(tmp_path, "ab", T0 - timedelta(days=i)) for i in range(4)]  # ids' times run backwards
    assert main(["list", "--results", str(tmp_path), "--last", "2"]) == 0
    *listed, left = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in listed] == made[:-3:-1], "the two created last, newest first"
    assert left == "2 earlier sweeps not shown (--all lists every one)"
    assert main(["list", "--results", str(tmp_path), "--all"]) == 0
    assert [line.split()[0] for line in capsys.readouterr().out.splitlines()] == made[::-1]
    assert main(["list", "--results", str(tmp_path)]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 4, "under the default: no line about the rest"
    assert main(["list", "--results", str(tmp_path), "--last", "0"]) == 2
    assert "--last" in capsys.readouterr().err
