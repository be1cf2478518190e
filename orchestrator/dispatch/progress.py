"""Live progress of a sweep on the client: one bar for the sweep, one for the running bench.

Fed by the worker's ``log_event`` messages (``contract.PROGRESS_TOPIC``) and by the dispatcher
when a run's outcome arrives. Disabled, every method is a no-op.
"""

from __future__ import annotations

import threading

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from orchestrator.contract import PlannedRun


class SweepProgress:
    """Rich progress bars for one sweep (a context manager)."""

    def __init__(self, runs: list[PlannedRun], *, enabled: bool, console: Console | None = None) -> None:
        self.sweep_ids = {run.sweep_id for run in runs}
        self.total_runs = len(runs)
        self.enabled = enabled
        self._lock = threading.Lock()
        self._progress = Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            console=console or Console(stderr=True), disable=not enabled,
        )
        self._overall: TaskID | None = None
        self._current: TaskID | None = None
        self._current_key: str | None = None
        self._finished: set[str] = set()

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
        """Print a line above the bars."""
        if self.enabled:
            self._progress.console.print(text, highlight=False)

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
                self._replace_current(key, f"{label} [waiting for the host lock]", total=None)
            elif msg.get("event") == "started":
                self._replace_current(key, label, total=msg.get("total"))
            elif msg.get("event") == "step" and key == self._current_key and self._current is not None:
                phase = "warm-up" if msg.get("warmup") else "measure"
                self._progress.update(self._current, completed=msg.get("done", 0),
                                      description=f"{label} [{phase}]")

    def run_finished(self, outcome: dict) -> None:
        """Advance the sweep bar and print one line for the finished run."""
        with self._lock:
            self._finished.add(outcome["run_key"])
            self._replace_current(None, None, total=None)
            if self._overall is not None:
                self._progress.advance(self._overall)
        throughput = outcome.get("throughput")
        detail = f"throughput {throughput:,.1f}" if throughput is not None else (outcome.get("error") or "")
        self.say(f"#{outcome.get('order')} {outcome.get('side')} {outcome.get('case')}: "
                 f"{outcome['status']} {detail.splitlines()[0] if detail else ''}")

    def _replace_current(self, key: str | None, description: str | None, total: int | None) -> None:
        if self._current is not None:
            self._progress.remove_task(self._current)
            self._current = None
        self._current_key = key
        if description is not None:
            self._current = self._progress.add_task(description, total=total)
