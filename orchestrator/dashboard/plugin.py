"""The scheduler side of the live board: a ``SchedulerPlugin`` fed by ``log_event``.

Bench workers publish run progress on ``PROGRESS_TOPIC`` and their host record on ``HOST_TOPIC``;
the dispatcher publishes the plan and the end of a sweep on ``PROGRESS_TOPIC``. Every message
reaches the plugin's ``log_event`` on the scheduler; ``board_snapshot`` (run with
``Client.run_on_scheduler``) hands the state to ``shasweep status``.
"""

from __future__ import annotations

from typing import Any

from distributed import Scheduler
from distributed.diagnostics.plugin import SchedulerPlugin

from orchestrator.contract import PROGRESS_TOPIC
from orchestrator.dashboard.board import SweepBoard

PLUGIN_NAME = "shasweep-board"
HOST_TOPIC = "shasweep-host"


class BoardPlugin(SchedulerPlugin):
    """Keeps a ``SweepBoard`` up to date with the scheduler's progress and host events."""

    name = PLUGIN_NAME

    def __init__(self) -> None:
        self.board = SweepBoard()

    async def start(self, scheduler: Scheduler) -> None:
        """Catch up with the messages logged before the plugin was added."""
        for topic in (HOST_TOPIC, PROGRESS_TOPIC):
            for _, msg in scheduler.get_events(topic):
                self.log_event(topic, msg)

    def log_event(self, topic: str, msg: Any) -> None:
        if topic == PROGRESS_TOPIC:
            self.board.feed(msg)
        elif topic == HOST_TOPIC:
            self.board.record_host(msg)


def board_of(scheduler: Scheduler) -> SweepBoard | None:
    """The board of ``scheduler``'s plugin, or None when the plugin is not installed."""
    plugin = scheduler.plugins.get(PLUGIN_NAME)
    return plugin.board if isinstance(plugin, BoardPlugin) else None


def board_installed(dask_scheduler: Scheduler) -> bool:
    """For ``Client.run_on_scheduler``: whether this scheduler has the board plugin."""
    return board_of(dask_scheduler) is not None


def board_snapshot(dask_scheduler: Scheduler, sweep_id: str | None = None) -> dict:
    """For ``Client.run_on_scheduler``: whether the board is installed, its sweeps, hosts, one sweep."""
    board = board_of(dask_scheduler)
    if board is None:
        return {"installed": False, "sweeps": [], "hosts": {}, "sweep": None}
    return {"installed": True, "sweeps": board.sweep_ids(), "hosts": dict(board.hosts),
            "sweep": board.snapshot(sweep_id)}
