"""Live progress of a sweep on the client: one bar for the sweep, one for the running bench.

Fed by the worker's ``log_event`` messages (``contract.PROGRESS_TOPIC``) and by the dispatcher
when a run's outcome arrives. The sweep bar's ETA is the mean wall time of the finished runs times
the runs left, counted down from the last run's end. Disabled (``--no-progress``), only the bars
go: the dashboard URL and the one line per finished run are still printed.
"""

from __future__ import annotations

import threading
import time
from datetime import timedelta

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.text import Text

from orchestrator.contract import Outcome, PlannedRun
from orchestrator.dashboard.board import eta_seconds
from orchestrator.display import wrapped
from orchestrator.printable import printable


class EtaColumn(ProgressColumn):
    """``ETA 0:03:20`` from the task's ``eta_at`` field (a ``time.monotonic()`` instant), if set."""

    def render(self, task: Task) -> Text:
        eta_at = task.fields.get("eta_at")
        if eta_at is None:
            return Text("")
        left = max(0.0, eta_at - time.monotonic())
        return Text(f"ETA {timedelta(seconds=round(left))}", style="progress.remaining")


class SweepProgress:
    """Rich progress bars for one sweep (a context manager)."""

    def __init__(self, runs: list[PlannedRun], *, enabled: bool, console: Console | None = None) -> None:
        self.sweep_ids = {run.sweep_id for run in runs}
        self.total_runs = len(runs)
        self.enabled = enabled
        self._lock = threading.Lock()
        self._progress = Progress(
            TextColumn("{task.description}", markup=False), BarColumn(), MofNCompleteColumn(),
            TimeElapsedColumn(), EtaColumn(),
            console=console or Console(stderr=True, markup=False), disable=not enabled,
        )
        self._overall: TaskID | None = None
        self._current: TaskID | None = None
        self._current_key: str | None = None
        self._finished: set[str] = set()
        self._walls: list[float] = []

    def __enter__(self) -> SweepProgress:
        self._progress.start()
        self._overall = self._progress.add_task("sweep", total=self.total_runs)
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    def add_runs(self, count: int) -> None:
        """The sweep grew by ``count`` runs (an adaptive round)."""
        self.total_runs += count
        if self._overall is not None:
            self._progress.update(self._overall, total=self.total_runs)

    def say(self, text: str) -> None:
        """Print a line (above the bars when they are shown), as the characters it is (no markup,
        ``printable``): on a terminal broken between phrases to fit it, else whole (``--no-progress``
        into a log)."""
        console = self._progress.console
        for line in wrapped(printable(text), console.width if console.is_terminal else None):
            console.print(line, highlight=False, markup=False, soft_wrap=True)

    def handle_event(self, event: tuple[float, dict]) -> None:
        """``Client.subscribe_topic`` handler for the worker's progress messages."""
        _, msg = event
        if not isinstance(msg, dict) or msg.get("sweep_id") not in self.sweep_ids:
            return
        key = msg.get("run_key")
        label = f"#{msg.get('order')} {msg.get('side')} {msg.get('case')}"
        with self._lock:
            if key in self._finished:  # a late message of a run whose outcome already arrived
                return
            if msg.get("event") == "waiting":
                waiting = _waiting_text(msg)
                self._replace_current(key, f"{label} [{waiting}]", total=None)
                if msg.get("holder") and not self.enabled:  # the lock is taken: say so once
                    self.say(f"#{msg.get('order')} {waiting}")
            elif msg.get("event") == "started":
                self._replace_current(key, label, total=msg.get("total"))
            elif msg.get("event") == "step" and key == self._current_key and self._current is not None:
                phase = "warm-up" if msg.get("warmup") else "measure"
                self._progress.update(self._current, completed=msg.get("done", 0),
                                      description=printable(f"{label} [{phase}]"))

    def run_finished(self, outcome: Outcome) -> None:
        """Advance the sweep bar and print one line for the finished run."""
        with self._lock:
            self._finished.add(outcome.run_key)
            self._replace_current(None, None, total=None)
            if outcome.wall_s is not None:
                self._walls.append(float(outcome.wall_s))
            if self._overall is not None:
                self._progress.advance(self._overall)
                left = eta_seconds(self._walls, self.total_runs - len(self._finished))
                self._progress.update(self._overall,
                                      eta_at=None if left is None else time.monotonic() + left)
        throughput = outcome.throughput
        detail = f"throughput {throughput:,.1f}" if throughput is not None else (outcome.error or "")
        reused = f" (reused from {outcome.reused_from})" if outcome.reused_from else ""
        wait_s = outcome.lock_wait_s
        long_wait = wait_s is not None and wait_s >= 1
        waited = f" (waited {wait_s:.0f} s for the host lock)" if long_wait else ""
        self.say(f"#{outcome.order} {outcome.side} {outcome.case}: "
                 f"{outcome.status} {detail.splitlines()[0] if detail else ''}{reused}{waited}")

    def _replace_current(self, key: str | None, description: str | None, total: int | None) -> None:
        if self._current is not None:
            self._progress.remove_task(self._current)
            self._current = None
        self._current_key = key
        if description is not None:
            self._current = self._progress.add_task(printable(description), total=total)


def _waiting_text(msg: dict) -> str:
    """``waiting for host vm: held by sweep X (pid P) for 23 s``; ``waiting for the host lock`` until
    the worker found it taken."""
    holder = msg.get("holder")
    return f"waiting for host {msg.get('host_id')}: {holder}" if holder else "waiting for the host lock"
