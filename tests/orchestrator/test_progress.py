"""The client's progress: ETA from finished runs' walls; --no-progress keeps the lines, drops the bars."""

from __future__ import annotations

import io

from rich.console import Console

from orchestrator.contract import PlannedRun
from orchestrator.dispatch.progress import SweepProgress, eta_seconds


def planned(order: int) -> PlannedRun:
    return PlannedRun(sweep_id="s", run_key=f"k{order}", order=order, side="a", ref="HEAD", sha="a" * 40,
                      case="sac/fake/none", algo="sac", task="fake", sim="none", variant="manager",
                      repeat=order, repo="/repo", argv_template=("x",))


def test_eta_is_the_mean_wall_times_the_runs_left():
    assert eta_seconds([], 3) is None
    assert eta_seconds([10.0, 20.0], 4) == 60.0 and eta_seconds([5.0], 0) == 0.0


def test_no_progress_still_prints_the_url_and_one_line_per_run():
    out = io.StringIO()
    runs = [planned(i) for i in range(3)]
    with SweepProgress(runs, enabled=False, console=Console(file=out, width=100)) as progress:
        progress.say("dashboard: http://127.0.0.1:8787/shasweep")
        progress.run_finished(runs[0].outcome(status="ok", throughput=1234.5, wall_s=10.0))
    lines = out.getvalue().splitlines()
    assert lines == ["dashboard: http://127.0.0.1:8787/shasweep", "#0 a sac/fake/none: ok throughput 1,234.5"]


def test_the_sweep_bar_shows_an_eta_once_a_run_finished():
    out = io.StringIO()
    runs = [planned(i) for i in range(3)]
    console = Console(file=out, width=120, force_terminal=True)
    with SweepProgress(runs, enabled=True, console=console) as progress:
        progress.run_finished(runs[0].outcome(status="ok", throughput=1.0, wall_s=100.0))
        progress._progress.refresh()
    assert "ETA 0:03:" in out.getvalue()  # 2 runs left x 100 s, counting down
